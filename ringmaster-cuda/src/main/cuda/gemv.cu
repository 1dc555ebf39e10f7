// bf16-weight GEMV for decode: a few tokens against a large weight matrix, bound by weight bytes.
#pragma once
#include "rowdot.cuh"

template <int NT, int UNROLL>
__device__ __forceinline__ void gemv_group(float* y, const uint16_t* w, const float* x, int row, int M,
                                           int K, int t0, int nt) {
  const float* xr[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) xr[j] = x + static_cast<size_t>(t0 + (j < nt ? j : 0)) * K;
  float acc[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) acc[j] = 0.f;
  warp_row_dot<NT, UNROLL>(w, xr, nt, K, acc);
#pragma unroll
  for (int j = 0; j < NT; j++) {
    const float s = warp_sum(acc[j]);
    if (j < nt && (threadIdx.x & 31) == 0) y[static_cast<size_t>(t0 + j) * M + row] = s;
  }
}

// y[t, row] = w . x[t] for the n tokens, one warp: groups of up to 4 tokens, each group streaming
// the weight row once more (a lone token keeps 8 chunks in flight per lane, a group 4).
__device__ __forceinline__ void gemv_row(float* y, const uint16_t* w, const float* x, int row,
                                         int M, int K, int n) {
  for (int t0 = 0; t0 < n; t0 += 4) {
    const int nt = min(4, n - t0);
    if (nt == 1) {
      gemv_group<1, 8>(y, w, x, row, M, K, t0, 1);
    } else {
      gemv_group<4, 4>(y, w, x, row, M, K, t0, nt);
    }
  }
}

// y[t, m] = sum_k W[m, k] * x[t, k] for n tokens: W bf16 [M, K] row-major, x and y f32.
// Mapping: one warp per output row (blockDim.x / 32 rows per block, grid = ceil(M / rows-per-block));
// lanes stride over K in 16-byte chunks (gemv_row). Larger batches belong to cuBLAS.
RM_KERNEL void rm_gemv_bf16(float* y, const uint16_t* W, const float* x, int M, int K, int n) {
  rm_pdl_prologue();
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= M) return;
  gemv_row(y, W + static_cast<size_t>(row) * K, x, row, M, K, n);
}

// Two GEMVs over the same input in one launch: y1 = W1 x (M1 rows), y2 = W2 x (M2 rows), both with
// K columns (MLA's q and kv_a projections of the normed hidden state). Saves a launch per layer at
// batch 1, where each launch costs about as much as streaming a small matrix.
// Mapping: as rm_gemv_bf16 over M1 + M2 rows; a warp's row picks its matrix.
RM_KERNEL void rm_gemv2_bf16(float* y1, const uint16_t* W1, int M1, float* y2, const uint16_t* W2,
                             int M2, const float* x, int K, int n) {
  rm_pdl_prologue();
  int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= M1 + M2) return;
  float* y = y1;
  const uint16_t* W = W1;
  int M = M1;
  if (row >= M1) {
    row -= M1;
    y = y2;
    W = W2;
    M = M2;
  }
  gemv_row(y, W + static_cast<size_t>(row) * K, x, row, M, K, n);
}

// The gate|up projection of a SwiGLU MLP with the activation fused in: out[t, j] =
// silu(W[j] . x[t]) * (W[inter + j] . x[t]) for j < inter, W bf16 [2 * inter, K] (gate rows then up
// rows, as the fused gate_up weight is stored). Replaces a GEMV into a [n, 2 * inter] buffer plus
// rm_silu_mul; the same sums and the same silu expression, so results match that pair.
// Mapping: one warp per output column j, streaming its gate and up rows together (warp_rows_dot
// with two rows, 4 chunks each in flight per lane).
RM_KERNEL void rm_gemv_swiglu_bf16(float* out, const uint16_t* W, const float* x, int inter, int K,
                                   int n) {
  rm_pdl_prologue();
  const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (j >= inter) return;
  const uint16_t* const rows[2] = {W + static_cast<size_t>(j) * K,
                                   W + static_cast<size_t>(inter + j) * K};
  for (int t0 = 0; t0 < n; t0 += 4) {
    const int nt = min(4, n - t0);
    const float* xr[4];
#pragma unroll
    for (int q = 0; q < 4; q++) xr[q] = x + static_cast<size_t>(t0 + (q < nt ? q : 0)) * K;
    float acc[2][4] = {};
    warp_rows_dot<2, 4, 4>(rows, xr, nt, K, acc);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const float g = warp_sum(acc[0][q]), u = warp_sum(acc[1][q]);
      if (q < nt && (threadIdx.x & 31) == 0) {
        out[static_cast<size_t>(t0 + q) * inter + j] = (g / (1.f + expf(-g))) * u;
      }
    }
  }
}
