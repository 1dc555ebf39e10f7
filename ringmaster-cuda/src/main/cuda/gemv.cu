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

// y[t, m] = sum_k W[m, k] * x[t, k] for n tokens: W bf16 [M, K] row-major, x and y f32.
// Mapping: one warp per output row (blockDim.x / 32 rows per block, grid = ceil(M / rows-per-block));
// lanes stride over K in 16-byte chunks, 8 chunks in flight per lane for one token, 4 for groups of
// up to 4 tokens; each group of 4 tokens streams the weight row once more. Larger batches belong to
// cuBLAS.
RM_KERNEL void rm_gemv_bf16(float* y, const uint16_t* W, const float* x, int M, int K, int n) {
  rm_pdl_prologue();
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= M) return;
  const uint16_t* w = W + static_cast<size_t>(row) * K;
  for (int t0 = 0; t0 < n; t0 += 4) {
    const int nt = min(4, n - t0);
    if (nt == 1) {
      gemv_group<1, 8>(y, w, x, row, M, K, t0, 1);
    } else {
      gemv_group<4, 4>(y, w, x, row, M, K, t0, nt);
    }
  }
}
