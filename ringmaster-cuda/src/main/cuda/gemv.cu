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

// y[t, row] = w . x[t] for the n tokens, one warp: groups of up to G tokens (4 or 8), each group
// streaming the weight row once more. A lone token keeps 8 chunks in flight per lane, a group of
// 2-4 or 5-8 tokens 4. A token's sum does not depend on its group (warp_row_dot sums a token's
// chunks in the same order whatever NT and UNROLL), so G = 4 and G = 8 give the same bits; G = 8
// reads each weight row once for the 5-8 rows of a verify pass or a decode batch instead of twice,
// at the cost of registers (ptxas, sm_90: rm_gemv_bf16 72, rm_gemv_t8_bf16 94), which is why it is
// a kernel of its own that the host takes only for more than 4 tokens.
template <int G>
__device__ __forceinline__ void gemv_row(float* y, const uint16_t* w, const float* x, int row,
                                         int M, int K, int n) {
  for (int t0 = 0; t0 < n; t0 += G) {
    const int nt = min(G, n - t0);
    if (nt == 1) {
      gemv_group<1, 8>(y, w, x, row, M, K, t0, 1);
    } else if (G == 4 || nt <= 4) {
      gemv_group<4, 4>(y, w, x, row, M, K, t0, nt);
    } else {
      gemv_group<G, 4>(y, w, x, row, M, K, t0, nt);
    }
  }
}

template <int G>
__device__ __forceinline__ void gemv_rows(float* y, const uint16_t* W, const float* x, int M, int K,
                                          int n) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= M) return;
  gemv_row<G>(y, W + static_cast<size_t>(row) * K, x, row, M, K, n);
}

// y[t, m] = sum_k W[m, k] * x[t, k] for n tokens: W bf16 [M, K] row-major, x and y f32.
// Mapping: one warp per output row (blockDim.x / 32 rows per block, grid = ceil(M / rows-per-block));
// lanes stride over K in 16-byte chunks (gemv_row): tokens in groups of 4 (rm_gemv_bf16) or 8
// (rm_gemv_t8_bf16, the same bits). Larger batches belong to cuBLAS.
RM_KERNEL void rm_gemv_bf16(float* y, const uint16_t* W, const float* x, int M, int K, int n) {
  rm_pdl_prologue();
  gemv_rows<4>(y, W, x, M, K, n);
}

RM_KERNEL void rm_gemv_t8_bf16(float* y, const uint16_t* W, const float* x, int M, int K, int n) {
  rm_pdl_prologue();
  gemv_rows<8>(y, W, x, M, K, n);
}

template <int G>
__device__ __forceinline__ void gemv2_rows(float* y1, const uint16_t* W1, int M1, float* y2,
                                           const uint16_t* W2, int M2, const float* x, int K,
                                           int n) {
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
  gemv_row<G>(y, W + static_cast<size_t>(row) * K, x, row, M, K, n);
}

// Two GEMVs over the same input in one launch: y1 = W1 x (M1 rows), y2 = W2 x (M2 rows), both with
// K columns (MLA's q and kv_a projections of the normed hidden state). Saves a launch per layer at
// batch 1, where each launch costs about as much as streaming a small matrix.
// Mapping: as rm_gemv_bf16 over M1 + M2 rows; a warp's row picks its matrix; tokens in groups of 4
// (rm_gemv2_bf16) or 8 (rm_gemv2_t8_bf16).
RM_KERNEL void rm_gemv2_bf16(float* y1, const uint16_t* W1, int M1, float* y2, const uint16_t* W2,
                             int M2, const float* x, int K, int n) {
  rm_pdl_prologue();
  gemv2_rows<4>(y1, W1, M1, y2, W2, M2, x, K, n);
}

RM_KERNEL void rm_gemv2_t8_bf16(float* y1, const uint16_t* W1, int M1, float* y2,
                                const uint16_t* W2, int M2, const float* x, int K, int n) {
  rm_pdl_prologue();
  gemv2_rows<8>(y1, W1, M1, y2, W2, M2, x, K, n);
}

// Row g of the stacked matrices [W1; W2] (M1 + M2 rows of K columns) for one token: its weights and
// its output element, y1[g] or y2[g - M1]. A single GEMV is the stack with M2 = 0.
struct StackedRows {
  float* y1;
  const uint16_t* W1;
  int M1;
  float* y2;
  const uint16_t* W2;
  int K;

  __device__ __forceinline__ const uint16_t* weights(int g) const {
    return g < M1 ? W1 + static_cast<size_t>(g) * K : W2 + static_cast<size_t>(g - M1) * K;
  }

  __device__ __forceinline__ float* out(int g) const { return g < M1 ? y1 + g : y2 + (g - M1); }
};

// One token, R consecutive rows of the stack per warp, so that a warp has R rows' loads in flight
// (R = 2: 16 chunks a lane, twice a lone row's, as rm_gemv_swiglu_bf16's two rows; R = 4: as many
// with half the unroll, to hold the registers) and the grid has R times fewer warps. Each row is
// the sum gemv_group<1, 8> gives it (warp_rows_dot's order depends on neither R nor UNROLL), so
// the output is bit-identical to rm_gemv_bf16 / rm_gemv2_bf16 at n = 1. A warp's rows past the end
// re-read the last row and are not stored.
template <int R>
__device__ __forceinline__ void gemv1_rows(const StackedRows& m, int rows, const float* x) {
  constexpr int kUnroll = R == 4 ? 4 : 8;
  const int g0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * R;
  if (g0 >= rows) return;
  const uint16_t* w[R];
#pragma unroll
  for (int r = 0; r < R; r++) w[r] = m.weights(min(g0 + r, rows - 1));
  const float* const xr[1] = {x};
  float acc[R][1];
#pragma unroll
  for (int r = 0; r < R; r++) acc[r][0] = 0.f;
  warp_rows_dot<R, 1, kUnroll>(w, xr, 1, m.K, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float s = warp_sum(acc[r][0]);
    if (g0 + r < rows && (threadIdx.x & 31) == 0) *m.out(g0 + r) = s;
  }
}

// One token, S warps per row of the stack (blockDim.x / (32 * S) rows per block): more, lighter
// warps in flight than one warp per row. Warp s of a row sums the row's chunks s * 32 + lane, then
// every 32 * S chunks on (group_rows_dot over 32 * S lanes, unrolled 8 / S deep: K = 2048 in one
// group, with fewer registers); the row's first warp then adds the S warp sums in warp order.
// Deterministic, but associated differently from the one-warp kernels, so equal to them only
// within float rounding.
template <int S>
__device__ __forceinline__ void gemv1_split(const StackedRows& m, int rows, const float* x) {
  __shared__ float part[32];  // one warp sum per warp of the block (at most 32 warps)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = blockIdx.x * ((blockDim.x >> 5) / S) + warp / S;
  if (g < rows) {
    const uint16_t* const w[1] = {m.weights(g)};
    const float* const xr[1] = {x};
    float acc[1][1] = {{0.f}};
    group_rows_dot<1, 1, 8 / S, 32 * S>(w, xr, 1, m.K, (warp % S) * 32 + lane, acc);
    const float p = warp_sum(acc[0][0]);
    if (lane == 0) part[warp] = p;
  }
  __syncthreads();
  if (g < rows && warp % S == 0 && lane == 0) {
    float s = part[warp];
#pragma unroll
    for (int i = 1; i < S; i++) s += part[warp + i];
    *m.out(g) = s;
  }
}

// y1 = W1 x (M1 rows) and y2 = W2 x (M2 rows, 0 for a single GEMV) for one token, K columns: the
// n = 1 variants of rm_gemv_bf16 / rm_gemv2_bf16 the host can choose instead. Mapping:
//   rm_gemv1_r2_bf16, rm_gemv1_r4_bf16            2 or 4 rows per warp (gemv1_rows), bit-identical;
//   rm_gemv1_splitk2_bf16, rm_gemv1_splitk4_bf16  2 or 4 warps per row (gemv1_split), deterministic.
RM_KERNEL void rm_gemv1_r2_bf16(float* y1, const uint16_t* W1, int M1, float* y2,
                                const uint16_t* W2, int M2, const float* x, int K) {
  rm_pdl_prologue();
  gemv1_rows<2>(StackedRows{y1, W1, M1, y2, W2, K}, M1 + M2, x);
}

RM_KERNEL void rm_gemv1_r4_bf16(float* y1, const uint16_t* W1, int M1, float* y2,
                                const uint16_t* W2, int M2, const float* x, int K) {
  rm_pdl_prologue();
  gemv1_rows<4>(StackedRows{y1, W1, M1, y2, W2, K}, M1 + M2, x);
}

RM_KERNEL void rm_gemv1_splitk2_bf16(float* y1, const uint16_t* W1, int M1, float* y2,
                                     const uint16_t* W2, int M2, const float* x, int K) {
  rm_pdl_prologue();
  gemv1_split<2>(StackedRows{y1, W1, M1, y2, W2, K}, M1 + M2, x);
}

RM_KERNEL void rm_gemv1_splitk4_bf16(float* y1, const uint16_t* W1, int M1, float* y2,
                                     const uint16_t* W2, int M2, const float* x, int K) {
  rm_pdl_prologue();
  gemv1_split<4>(StackedRows{y1, W1, M1, y2, W2, K}, M1 + M2, x);
}

// The gate|up projection of a SwiGLU MLP with the activation fused in: out[t, j] =
// silu(W[j] . x[t]) * (W[inter + j] . x[t]) for j < inter, W bf16 [2 * inter, K] (gate rows then up
// rows, as the fused gate_up weight is stored). Replaces a GEMV into a [n, 2 * inter] buffer plus
// rm_silu_mul; the same sums and the same silu expression, so results match that pair.
// Mapping: one warp per output column j, streaming its gate and up rows together (warp_rows_dot
// with two rows, 4 chunks each in flight per lane); tokens in groups of 4 (rm_gemv_swiglu_bf16) or
// 8 (rm_gemv_swiglu_t8_bf16: the same sums, each row streamed once for 5-8 tokens).
template <int NT>
__device__ __forceinline__ void gemv_swiglu_group(float* out, const uint16_t* const (&rows)[2],
                                                  const float* x, int j, int inter, int K, int t0,
                                                  int nt) {
  const float* xr[NT];
#pragma unroll
  for (int q = 0; q < NT; q++) xr[q] = x + static_cast<size_t>(t0 + (q < nt ? q : 0)) * K;
  float acc[2][NT] = {};
  warp_rows_dot<2, NT, 4>(rows, xr, nt, K, acc);
#pragma unroll
  for (int q = 0; q < NT; q++) {
    const float g = warp_sum(acc[0][q]), u = warp_sum(acc[1][q]);
    if (q < nt && (threadIdx.x & 31) == 0) {
      out[static_cast<size_t>(t0 + q) * inter + j] = (g / (1.f + expf(-g))) * u;
    }
  }
}

template <int G>
__device__ __forceinline__ void gemv_swiglu(float* out, const uint16_t* W, const float* x,
                                            int inter, int K, int n) {
  const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (j >= inter) return;
  const uint16_t* const rows[2] = {W + static_cast<size_t>(j) * K,
                                   W + static_cast<size_t>(inter + j) * K};
  for (int t0 = 0; t0 < n; t0 += G) {
    const int nt = min(G, n - t0);
    if (G == 4 || nt <= 4) {
      gemv_swiglu_group<4>(out, rows, x, j, inter, K, t0, nt);
    } else {
      gemv_swiglu_group<G>(out, rows, x, j, inter, K, t0, nt);
    }
  }
}

RM_KERNEL void rm_gemv_swiglu_bf16(float* out, const uint16_t* W, const float* x, int inter, int K,
                                   int n) {
  rm_pdl_prologue();
  gemv_swiglu<4>(out, W, x, inter, K, n);
}

RM_KERNEL void rm_gemv_swiglu_t8_bf16(float* out, const uint16_t* W, const float* x, int inter,
                                      int K, int n) {
  rm_pdl_prologue();
  gemv_swiglu<8>(out, W, x, inter, K, n);
}
