// DeepSeek FP8 block-scaled weights, weight-only: e4m3 codes [rows, K] (one byte each) with one f32
// scale (weight_scale_inv, a multiplier) per 128x128 block; W[r][k] = e4m3(codes[r][k]) * scale.
// Activations stay f32 and accumulation f32, as in the bf16 kernels.
//
// Scale layout: a matrix is a stack of parts of `partRows` rows, each quantized on its own (the
// fused gate|up matrix is two parts of `inter` rows, stacked experts 2E or E parts), so a part
// whose row count is not a multiple of 128 ends in a partial scale block and the next part starts
// a fresh one. Row g's scales are the row (g / partRows) * ceil(partRows / 128) + (g % partRows) /
// 128 of the [scale rows, ceil(K / 128)] f32 array. A plain matrix is one part (partRows = rows).
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "moe_experts.cu"

constexpr int kFp8Block = 128;

// The scales of row g (ceil(K / 128) floats, one per 128 columns).
__device__ __forceinline__ const float* fp8_scale_row(const float* S, size_t g, int partRows,
                                                      int K) {
  const size_t scaleCols = (K + kFp8Block - 1) / kFp8Block;
  const size_t partScaleRows = (partRows + kFp8Block - 1) / kFp8Block;
  return S + ((g / partRows) * partScaleRows + (g % partRows) / kFp8Block) * scaleCols;
}

__device__ __forceinline__ float e4m3_to_f32(uint8_t b) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), __NV_E4M3);
  return __half2float(__half(h));
}

// Unpacks 4 e4m3 codes (one 32-bit word, lowest byte first) exactly (e4m3 fits in f16).
__device__ __forceinline__ void e4m3x4_to_f32(uint32_t v, float* f) {
  const __half2_raw lo =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3);
  const __half2_raw hi =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v >> 16), __NV_E4M3);
  const float2 a = __half22float2(__half2(lo));
  const float2 b = __half22float2(__half2(hi));
  f[0] = a.x;
  f[1] = a.y;
  f[2] = b.x;
  f[3] = b.y;
}

// acc[r][j] += dequant(w[r]) . xr[j] over K for r < R, j < nt, per lane (the caller sums the warp).
// When K % 16 == 0 each lane streams 16-byte chunks (16 codes, always inside one 128-column block,
// since 16 divides 128) lane, lane + 32, ..., R * UNROLL of them in flight; each chunk's codes are
// decoded once, each token's 16 activations are loaded once for all R rows (FP8 rows carry half the
// bytes of bf16 ones, so activation loads per weight byte would otherwise double), and a chunk's
// 16 products are summed, then multiplied by the block's scale. Otherwise a scalar path handles
// any K.
template <int R, int NT, int UNROLL>
__device__ __forceinline__ void warp_rows_dot_fp8(const uint8_t* const (&w)[R],
                                                  const float* const (&s)[R],
                                                  const float* const (&xr)[NT], int nt, int K,
                                                  float (&acc)[R][NT]) {
  const int lane = threadIdx.x & 31;
  if ((K & 15) == 0) {
    const int chunks = K >> 4;
    for (int c = lane; c < chunks; c += 32 * UNROLL) {
      uint4 wv[R][UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          wv[r][u] = c + 32 * u < chunks
                         ? __ldcs(reinterpret_cast<const uint4*>(w[r]) + (c + 32 * u))
                         : make_uint4(0u, 0u, 0u, 0u);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int cc = c + 32 * u;
        if (cc >= chunks) break;
        float wf[R][16];
        float scale[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
          e4m3x4_to_f32(wv[r][u].x, wf[r]);
          e4m3x4_to_f32(wv[r][u].y, wf[r] + 4);
          e4m3x4_to_f32(wv[r][u].z, wf[r] + 8);
          e4m3x4_to_f32(wv[r][u].w, wf[r] + 12);
          scale[r] = __ldg(s[r] + (cc >> 3));
        }
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) {
            float xv[16];
            load_f32x16(xr[j] + static_cast<size_t>(cc) * 16, xv);
#pragma unroll
            for (int r = 0; r < R; r++) {
              float d = 0.f;
#pragma unroll
              for (int i = 0; i < 16; i++) d += wf[r][i] * xv[i];
              acc[r][j] = fmaf(scale[r], d, acc[r][j]);
            }
          }
        }
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        const float wk = e4m3_to_f32(w[r][k]) * s[r][k / kFp8Block];
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) acc[r][j] += wk * xr[j][k];
        }
      }
    }
  }
}

// Row g of the stacked FP8 matrices [W1; W2] (M1 + M2 rows of K columns, each matrix with its own
// scales and part rows): its codes, its scales and its output element for token t. A single GEMV is
// the stack with M2 = 0.
struct Fp8StackedRows {
  float* y1;
  const uint8_t* W1;
  const float* S1;
  int P1;
  int M1;
  float* y2;
  const uint8_t* W2;
  const float* S2;
  int P2;
  int M2;
  int K;

  __device__ __forceinline__ const uint8_t* codes(int g) const {
    return g < M1 ? W1 + static_cast<size_t>(g) * K : W2 + static_cast<size_t>(g - M1) * K;
  }

  __device__ __forceinline__ const float* scales(int g) const {
    return g < M1 ? fp8_scale_row(S1, g, P1, K) : fp8_scale_row(S2, g - M1, P2, K);
  }

  __device__ __forceinline__ float* out(int g, int t) const {
    return g < M1 ? y1 + static_cast<size_t>(t) * M1 + g
                  : y2 + static_cast<size_t>(t) * M2 + (g - M1);
  }
};

// Rows g0 .. g0 + R - 1 of the stack for tokens t0 .. t0 + nt - 1, one warp. Rows past the end
// re-read the last row and are not stored.
template <int R, int NT, int UNROLL>
__device__ __forceinline__ void gemv_fp8_rows(const Fp8StackedRows& m, int g0, const float* x,
                                              int t0, int nt) {
  const int rows = m.M1 + m.M2;
  const uint8_t* w[R];
  const float* s[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int g = min(g0 + r, rows - 1);
    w[r] = m.codes(g);
    s[r] = m.scales(g);
  }
  const float* xr[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) xr[j] = x + static_cast<size_t>(t0 + (j < nt ? j : 0)) * m.K;
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; r++) {
#pragma unroll
    for (int j = 0; j < NT; j++) acc[r][j] = 0.f;
  }
  warp_rows_dot_fp8<R, NT, UNROLL>(w, s, xr, nt, m.K, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
#pragma unroll
    for (int j = 0; j < NT; j++) {
      const float v = warp_sum(acc[r][j]);
      if (j < nt && g0 + r < rows && (threadIdx.x & 31) == 0) *m.out(g0 + r, t0 + j) = v;
    }
  }
}

constexpr int kFp8GemvRowsPerWarp = 2;

// y1[t] = dequant(W1) x[t] (M1 rows) and y2[t] = dequant(W2) x[t] (M2 rows; 0 for a single GEMV) for
// n tokens, K columns: W1, W2 e4m3 with block scales S1, S2 in parts of P1, P2 rows (layout above),
// x and y f32. Two matrices of one input in one launch (MLA's q and kv_a). Mapping: a warp per 2
// consecutive rows of the stack (4 warps a block), so that each activation load serves both rows;
// a lone token keeps 8 chunks of 16 codes in flight per lane (4 per row), groups of up to 4 tokens
// 4 (each group streams the rows once more, from L1/L2 after the first).
RM_KERNEL void rm_gemv_fp8(float* y1, const uint8_t* W1, const float* S1, int P1, int M1, float* y2,
                           const uint8_t* W2, const float* S2, int P2, int M2, const float* x, int K,
                           int n) {
  rm_pdl_prologue();
  const Fp8StackedRows m{y1, W1, S1, P1, M1, y2, W2, S2, P2, M2, K};
  const int g0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * kFp8GemvRowsPerWarp;
  if (g0 >= M1 + M2) return;
  if (n == 1) {
    gemv_fp8_rows<kFp8GemvRowsPerWarp, 1, 4>(m, g0, x, 0, 1);
    return;
  }
  for (int t0 = 0; t0 < n; t0 += 4) {
    gemv_fp8_rows<kFp8GemvRowsPerWarp, 4, 2>(m, g0, x, t0, min(4, n - t0));
  }
}

template <int NT, int UNROLL>
__device__ __forceinline__ void gemv_swiglu_fp8_group(float* out, const uint8_t* const (&rows)[2],
                                                      const float* const (&scales)[2],
                                                      const float* x, int j, int inter, int K,
                                                      int t0, int nt) {
  const float* xr[NT];
#pragma unroll
  for (int q = 0; q < NT; q++) xr[q] = x + static_cast<size_t>(t0 + (q < nt ? q : 0)) * K;
  float acc[2][NT];
#pragma unroll
  for (int q = 0; q < NT; q++) acc[0][q] = acc[1][q] = 0.f;
  warp_rows_dot_fp8<2, NT, UNROLL>(rows, scales, xr, nt, K, acc);
#pragma unroll
  for (int q = 0; q < NT; q++) {
    const float g = warp_sum(acc[0][q]), u = warp_sum(acc[1][q]);
    if (q < nt && (threadIdx.x & 31) == 0) {
      out[static_cast<size_t>(t0 + q) * inter + j] = (g / (1.f + expf(-g))) * u;
    }
  }
}

// rm_gemv_swiglu_bf16 over an FP8 gate|up matrix: out[t, j] = silu(W[j] . x[t]) * (W[inter + j] .
// x[t]) for j < inter, W e4m3 [2 * inter, K] with scales in parts of `inter` rows (gate, then up).
// Mapping: a warp per output column j, streaming its gate and up rows together (one activation
// load for both).
RM_KERNEL void rm_gemv_swiglu_fp8(float* out, const uint8_t* W, const float* S, const float* x,
                                  int inter, int K, int n) {
  rm_pdl_prologue();
  const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (j >= inter) return;
  const uint8_t* const rows[2] = {W + static_cast<size_t>(j) * K,
                                  W + static_cast<size_t>(inter + j) * K};
  const float* const scales[2] = {fp8_scale_row(S, j, inter, K),
                                  fp8_scale_row(S, inter + j, inter, K)};
  if (n == 1) {
    gemv_swiglu_fp8_group<1, 4>(out, rows, scales, x, j, inter, K, 0, 1);
    return;
  }
  for (int t0 = 0; t0 < n; t0 += 4) {
    gemv_swiglu_fp8_group<4, 2>(out, rows, scales, x, j, inter, K, t0, min(4, n - t0));
  }
}

// out[r, k] = bf16(e4m3(W[r, k]) * scale) for rows x K (the prefill path: cuBLAS then multiplies
// the bf16 copy). Mapping: grid-stride, one thread per 4 consecutive codes of a row when K % 4 == 0,
// else per code.
RM_KERNEL void rm_dequant_fp8_bf16(uint16_t* out, const uint8_t* W, const float* S, long long rows,
                                   int K, int partRows) {
  rm_pdl_prologue();
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if ((K & 3) == 0) {
    const long long quads = rows * (K >> 2);
    for (long long q = first; q < quads; q += stride) {
      const long long r = q / (K >> 2);
      const int k = static_cast<int>(q % (K >> 2)) * 4;
      const float scale = fp8_scale_row(S, r, partRows, K)[k / kFp8Block];
      float f[4];
      e4m3x4_to_f32(reinterpret_cast<const uint32_t*>(W)[q], f);
      uint2 o;
      o.x = f32_to_bf16_bits(f[0] * scale) | (static_cast<uint32_t>(f32_to_bf16_bits(f[1] * scale)) << 16);
      o.y = f32_to_bf16_bits(f[2] * scale) | (static_cast<uint32_t>(f32_to_bf16_bits(f[3] * scale)) << 16);
      reinterpret_cast<uint2*>(out)[q] = o;
    }
  } else {
    for (long long e = first; e < rows * K; e += stride) {
      const long long r = e / K;
      const int k = static_cast<int>(e % K);
      out[e] = f32_to_bf16_bits(e4m3_to_f32(W[e]) * fp8_scale_row(S, r, partRows, K)[k / kFp8Block]);
    }
  }
}

// rm_moe_gate_up over FP8 experts: w13 e4m3 [E, 2*inter, hidden] with scales s13 in parts of
// `inter` rows (each expert's gate, then its up projection). Same grid and mapping as
// rm_moe_gate_up: a warp per intermediate row of an active expert, its pairs 8 at a time.
RM_KERNEL void rm_moe_gate_up_fp8(float* h, const uint8_t* w13, const float* s13, const float* x,
                                  const int* offsets, const int* sortedPairs,
                                  const int* activeExperts, const int* activeCount, int hidden,
                                  int inter, int topK) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (i >= inter) return;
  const int e = activeExperts[blockIdx.y];
  const size_t g = static_cast<size_t>(e) * 2 * inter + i;
  const uint8_t* const rows[2] = {w13 + g * hidden, w13 + (g + inter) * hidden};
  const float* const scales[2] = {fp8_scale_row(s13, g, inter, hidden),
                                  fp8_scale_row(s13, g + inter, inter, hidden)};
  const int begin = offsets[e], end = offsets[e + 1];
  for (int c = begin; c < end; c += kMoeTokensPerPass) {
    const int nt = min(kMoeTokensPerPass, end - c);
    const int* pairs = sortedPairs + c;
    const float* xr[kMoeTokensPerPass];
    int pair[kMoeTokensPerPass];
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) {
      pair[j] = pairs[j < nt ? j : 0];
      xr[j] = x + static_cast<size_t>(pair[j] / topK) * hidden;
    }
    float acc[2][kMoeTokensPerPass];
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) acc[0][j] = acc[1][j] = 0.f;
    if (nt == 1) {
      const float* const x1[1] = {xr[0]};
      float a1[2][1] = {{0.f}, {0.f}};
      warp_rows_dot_fp8<2, 1, 4>(rows, scales, x1, 1, hidden, a1);
      acc[0][0] = a1[0][0];
      acc[1][0] = a1[1][0];
    } else {
      warp_rows_dot_fp8<2, kMoeTokensPerPass, 1>(rows, scales, xr, nt, hidden, acc);
    }
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) {
      const float gs = warp_sum(acc[0][j]), us = warp_sum(acc[1][j]);
      if (j < nt && (threadIdx.x & 31) == 0) {
        h[static_cast<size_t>(pair[j]) * inter + i] = (gs / (1.f + expf(-gs))) * us;
      }
    }
  }
}

// rm_moe_down over FP8 experts: w2 e4m3 [E, hidden, inter] with scales s2 in parts of `hidden`
// rows (one per expert); y[p, d] = routeWeights[p] * (down_e[d] . h[p]). Same grid and mapping as
// rm_moe_down: a warp per output dim of an active expert, its pairs 8 at a time.
RM_KERNEL void rm_moe_down_fp8(float* y, const uint8_t* w2, const float* s2, const float* h,
                               const float* routeWeights, const int* offsets,
                               const int* sortedPairs, const int* activeExperts,
                               const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int d = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (d >= hidden) return;
  const int e = activeExperts[blockIdx.y];
  const size_t g = static_cast<size_t>(e) * hidden + d;
  const uint8_t* const rows[1] = {w2 + g * inter};
  const float* const scales[1] = {fp8_scale_row(s2, g, hidden, inter)};
  const int begin = offsets[e], end = offsets[e + 1];
  for (int c = begin; c < end; c += kMoeTokensPerPass) {
    const int nt = min(kMoeTokensPerPass, end - c);
    const int* pairs = sortedPairs + c;
    const float* hr[kMoeTokensPerPass];
    int pair[kMoeTokensPerPass];
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) {
      pair[j] = pairs[j < nt ? j : 0];
      hr[j] = h + static_cast<size_t>(pair[j]) * inter;
    }
    float acc[1][kMoeTokensPerPass];
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) acc[0][j] = 0.f;
    if (nt == 1) {
      const float* const h1[1] = {hr[0]};
      float a1[1][1] = {{0.f}};
      warp_rows_dot_fp8<1, 1, 8>(rows, scales, h1, 1, inter, a1);
      acc[0][0] = a1[0][0];
    } else {
      warp_rows_dot_fp8<1, kMoeTokensPerPass, 2>(rows, scales, hr, nt, inter, acc);
    }
#pragma unroll
    for (int j = 0; j < kMoeTokensPerPass; j++) {
      const float v = warp_sum(acc[0][j]);
      if (j < nt && (threadIdx.x & 31) == 0) {
        y[static_cast<size_t>(pair[j]) * hidden + d] = routeWeights[pair[j]] * v;
      }
    }
  }
}
