// ModelOpt NVFP4 weights, weight-only (W4A16): e2m1 codes, one e4m3 scale per 16 elements of a row,
// one f32 global scale per separately quantized part; W[r][k] = e2m1 * (e4m3 * global). Activations
// stay f32 on the CUDA cores, accumulation f32.
//
// Device layout (written by Nvfp4Layout at load time):
// - codes [rows, K / 2] bytes, as the checkpoint stores them except inside each 32-bit word (8
//   elements k0 .. k0 + 7, k0 a multiple of 8): nibble slot i (bits 4i .. 4i + 3) holds element
//   k0 + {0, 2, 4, 6, 1, 3, 5, 7}[i]. So slots p and p + 4 hold the consecutive elements 2p, 2p + 1,
//   and one shift and two masks (e2m1_pair_f16x2) turn them into an f16 pair in k order;
// - scales [rows, K / 16] e4m3 bytes, as stored;
// - globals: f32 [rows / partRows], weight_scale_2 of each part (the fused gate|up matrix is two
//   parts of `inter` rows, stacked experts 2E or E parts).
//
// Decoding: the f16 bits (sign << 15) | (magnitude << 9) are e2m1 * 2^-14 exactly (codes 0 and 1
// become f16 subnormals; the conversions below keep them exact), so kernels carry a 2^14 factor in
// the scale they multiply a group's sum with.
#pragma once
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "fp8_weights.cu"

constexpr int kNvfp4Group = 16;
// 2^14: the factor e2m1_pair_f16x2 leaves out.
constexpr float kE2m1F16Scale = 16384.f;

// Slots p and p + 4 of a device-order word (elements 2p, 2p + 1) as f16 bits of e2m1 * 2^-14, the
// first in the low half. The sign bit of a slot goes to bit 15 (31), its three magnitude bits (two
// exponent, one mantissa) to bits 9 .. 11 (25 .. 27). p is a constant after unrolling.
__device__ __forceinline__ uint32_t e2m1_pair_f16x2(uint32_t w, int p) {
  const uint32_t a = w << (12 - 4 * p);
  return (a & 0x80008000u) | ((a >> 3) & 0x0e000e00u);
}

__device__ __forceinline__ float2 f16x2_bits_to_f32(uint32_t h) {
  __half2_raw r;
  r.x = static_cast<unsigned short>(h & 0xffffu);
  r.y = static_cast<unsigned short>(h >> 16);
  return __half22float2(__half2(r));
}

// The 8 elements of a device-order word, k order, as f32 times 2^-14.
__device__ __forceinline__ void e2m1x8_to_f32(uint32_t w, float* f) {
  float2 v = f16x2_bits_to_f32(e2m1_pair_f16x2(w, 0));
  f[0] = v.x;
  f[1] = v.y;
  v = f16x2_bits_to_f32(e2m1_pair_f16x2(w, 1));
  f[2] = v.x;
  f[3] = v.y;
  v = f16x2_bits_to_f32(e2m1_pair_f16x2(w, 2));
  f[4] = v.x;
  f[5] = v.y;
  v = f16x2_bits_to_f32(e2m1_pair_f16x2(w, 3));
  f[6] = v.x;
  f[7] = v.y;
}

__device__ __forceinline__ uint32_t nvfp4_pack_bf16x2(float lo, float hi) {
  return static_cast<uint32_t>(f32_to_bf16_bits(lo)) |
         (static_cast<uint32_t>(f32_to_bf16_bits(hi)) << 16);
}

// acc[r][j] += dequant(w[r]) . xr[j] over K for r < R, j < nt, per lane (the caller sums the warp);
// global[r] = the row's part's weight_scale_2; a group's scale is (e4m3 * global) * 2^14, the
// CPU's product first, times the 2^14 that the decoded codes lack.
// When K % 32 == 0 each lane streams 16-byte chunks (32 codes, two groups) lane, lane + 32, ...,
// R * UNROLL of them in flight, with the chunk's two scale bytes in one 2-byte load; each token's
// activations are loaded once for all R rows. Otherwise (K % 32 == 16) 8-byte chunks of one group.
template <int R, int NT, int UNROLL>
__device__ __forceinline__ void warp_rows_dot_nvfp4(const uint8_t* const (&w)[R],
                                                    const uint8_t* const (&s)[R],
                                                    const float (&global)[R],
                                                    const float* const (&xr)[NT], int nt, int K,
                                                    float (&acc)[R][NT]) {
  const int lane = threadIdx.x & 31;
  if ((K & 31) == 0) {
    const int chunks = K >> 5;
    for (int c = lane; c < chunks; c += 32 * UNROLL) {
      uint4 wv[R][UNROLL];
      uint32_t sv[R][UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          const bool ok = c + 32 * u < chunks;
          wv[r][u] = ok ? __ldcs(reinterpret_cast<const uint4*>(w[r]) + (c + 32 * u))
                        : make_uint4(0u, 0u, 0u, 0u);
          sv[r][u] = ok ? __ldg(reinterpret_cast<const unsigned short*>(s[r]) + (c + 32 * u)) : 0u;
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int cc = c + 32 * u;
        if (cc >= chunks) break;
        // One group at a time: both at once hold twice the decoded weights and activations, which
        // spills past 255 registers.
#pragma unroll 1
        for (int half = 0; half < 2; half++) {
          float wf[R][16];
          float scale[R];
#pragma unroll
          for (int r = 0; r < R; r++) {
            const uint32_t w0 = half == 0 ? wv[r][u].x : wv[r][u].z;
            const uint32_t w1 = half == 0 ? wv[r][u].y : wv[r][u].w;
            e2m1x8_to_f32(w0, wf[r]);
            e2m1x8_to_f32(w1, wf[r] + 8);
            scale[r] = e4m3_to_f32(static_cast<uint8_t>(sv[r][u] >> (8 * half))) * global[r] *
                       kE2m1F16Scale;
          }
#pragma unroll
          for (int j = 0; j < NT; j++) {
            if (j < nt) {
              float xv[16];
              load_f32x16(xr[j] + static_cast<size_t>(cc) * 32 + 16 * half, xv);
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
    }
  } else {
    const int groups = K >> 4;
    for (int gi = lane; gi < groups; gi += 32) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint2 v = __ldcs(reinterpret_cast<const uint2*>(w[r]) + gi);
        float wf[16];
        e2m1x8_to_f32(v.x, wf);
        e2m1x8_to_f32(v.y, wf + 8);
        const float scale = e4m3_to_f32(s[r][gi]) * global[r] * kE2m1F16Scale;
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) {
            const float* xp = xr[j] + static_cast<size_t>(gi) * 16;
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 16; i++) d += wf[i] * __ldg(xp + i);
            acc[r][j] = fmaf(scale, d, acc[r][j]);
          }
        }
      }
    }
  }
}

// Row g of a stack of NVFP4 matrices [W1; W2] (M1 + M2 rows of K columns, each with its own scales,
// globals and part rows). A single GEMV is the stack with M2 = 0.
struct Nvfp4StackedRows {
  float* y1;
  const uint8_t* W1;
  const uint8_t* S1;
  const float* G1;
  int P1;
  int M1;
  float* y2;
  const uint8_t* W2;
  const uint8_t* S2;
  const float* G2;
  int P2;
  int M2;
  int K;

  __device__ __forceinline__ const uint8_t* codes(int g) const {
    return g < M1 ? W1 + static_cast<size_t>(g) * (K / 2)
                  : W2 + static_cast<size_t>(g - M1) * (K / 2);
  }

  __device__ __forceinline__ const uint8_t* scales(int g) const {
    return g < M1 ? S1 + static_cast<size_t>(g) * (K / kNvfp4Group)
                  : S2 + static_cast<size_t>(g - M1) * (K / kNvfp4Group);
  }

  __device__ __forceinline__ float global(int g) const {
    return g < M1 ? __ldg(G1 + g / P1) : __ldg(G2 + (g - M1) / P2);
  }

  __device__ __forceinline__ float* out(int g, int t) const {
    return g < M1 ? y1 + static_cast<size_t>(t) * M1 + g
                  : y2 + static_cast<size_t>(t) * M2 + (g - M1);
  }
};

template <int R, int NT, int UNROLL>
__device__ __forceinline__ void gemv_nvfp4_rows(const Nvfp4StackedRows& m, int g0, const float* x,
                                                int t0, int nt) {
  const int rows = m.M1 + m.M2;
  const uint8_t* w[R];
  const uint8_t* s[R];
  float gl[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int g = min(g0 + r, rows - 1);
    w[r] = m.codes(g);
    s[r] = m.scales(g);
    gl[r] = m.global(g);
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
  warp_rows_dot_nvfp4<R, NT, UNROLL>(w, s, gl, xr, nt, m.K, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
#pragma unroll
    for (int j = 0; j < NT; j++) {
      const float v = warp_sum(acc[r][j]);
      if (j < nt && g0 + r < rows && (threadIdx.x & 31) == 0) *m.out(g0 + r, t0 + j) = v;
    }
  }
}

constexpr int kNvfp4GemvRowsPerWarp = 2;

// y1[t] = dequant(W1) x[t] (M1 rows) and y2[t] = dequant(W2) x[t] (M2 rows; 0 for one GEMV) for n
// tokens, K columns (layout above; x, y f32). Mapping as rm_gemv_fp8: a warp per 2 consecutive rows
// of the stack (4 warps a block), one activation load for both rows; a lone token keeps 8 chunks of
// 32 codes in flight per lane (4 per row), groups of up to 4 tokens 2.
RM_KERNEL void rm_gemv_nvfp4(float* y1, const uint8_t* W1, const uint8_t* S1, const float* G1,
                             int P1, int M1, float* y2, const uint8_t* W2, const uint8_t* S2,
                             const float* G2, int P2, int M2, const float* x, int K, int n) {
  rm_pdl_prologue();
  const Nvfp4StackedRows m{y1, W1, S1, G1, P1, M1, y2, W2, S2, G2, P2, M2, K};
  const int g0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * kNvfp4GemvRowsPerWarp;
  if (g0 >= M1 + M2) return;
  if (n == 1) {
    gemv_nvfp4_rows<kNvfp4GemvRowsPerWarp, 1, 4>(m, g0, x, 0, 1);
    return;
  }
  for (int t0 = 0; t0 < n; t0 += 4) {
    gemv_nvfp4_rows<kNvfp4GemvRowsPerWarp, 4, 1>(m, g0, x, t0, min(4, n - t0));
  }
}

template <int NT, int UNROLL>
__device__ __forceinline__ void gemv_swiglu_nvfp4_group(float* out,
                                                        const uint8_t* const (&rows)[2],
                                                        const uint8_t* const (&scales)[2],
                                                        const float (&global)[2], const float* x,
                                                        int j, int inter, int K, int t0, int nt) {
  const float* xr[NT];
#pragma unroll
  for (int q = 0; q < NT; q++) xr[q] = x + static_cast<size_t>(t0 + (q < nt ? q : 0)) * K;
  float acc[2][NT];
#pragma unroll
  for (int q = 0; q < NT; q++) acc[0][q] = acc[1][q] = 0.f;
  warp_rows_dot_nvfp4<2, NT, UNROLL>(rows, scales, global, xr, nt, K, acc);
#pragma unroll
  for (int q = 0; q < NT; q++) {
    const float g = warp_sum(acc[0][q]), u = warp_sum(acc[1][q]);
    if (q < nt && (threadIdx.x & 31) == 0) {
      out[static_cast<size_t>(t0 + q) * inter + j] = (g / (1.f + expf(-g))) * u;
    }
  }
}

// rm_gemv_swiglu_bf16 over an NVFP4 gate|up matrix [2 * inter, K] (two parts of `inter` rows: G[0]
// the gate's global scale, G[1] the up projection's): out[t, j] = silu(gate_j . x[t]) * (up_j .
// x[t]). A warp per output column j, streaming its gate and up rows together.
RM_KERNEL void rm_gemv_swiglu_nvfp4(float* out, const uint8_t* W, const uint8_t* S, const float* G,
                                    const float* x, int inter, int K, int n) {
  rm_pdl_prologue();
  const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (j >= inter) return;
  const size_t rowBytes = K / 2, scaleBytes = K / kNvfp4Group;
  const uint8_t* const rows[2] = {W + j * rowBytes, W + (inter + j) * rowBytes};
  const uint8_t* const scales[2] = {S + j * scaleBytes, S + (inter + j) * scaleBytes};
  const float global[2] = {__ldg(G), __ldg(G + 1)};
  if (n == 1) {
    gemv_swiglu_nvfp4_group<1, 4>(out, rows, scales, global, x, j, inter, K, 0, 1);
    return;
  }
  for (int t0 = 0; t0 < n; t0 += 4) {
    gemv_swiglu_nvfp4_group<4, 2>(out, rows, scales, global, x, j, inter, K, t0, min(4, n - t0));
  }
}

// out[r, k] = bf16(e2m1 * (e4m3 * global)) for rows x K, the CPU's product order (the path of
// linears beyond the GEMV: cuBLAS then multiplies the bf16 copy). Grid-stride, a thread per device
// word (8 elements).
RM_KERNEL void rm_dequant_nvfp4_bf16(uint16_t* out, const uint8_t* W, const uint8_t* S,
                                     const float* G, long long rows, int K, int partRows) {
  rm_pdl_prologue();
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long words = rows * (K >> 3);
  for (long long q = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; q < words;
       q += stride) {
    const long long r = q / (K >> 3);
    const int k = static_cast<int>(q % (K >> 3)) * 8;
    const float scale = e4m3_to_f32(S[r * (K / kNvfp4Group) + k / kNvfp4Group]) *
                        __ldg(G + r / partRows);
    float f[8];
    e2m1x8_to_f32(reinterpret_cast<const uint32_t*>(W)[q], f);
    uint4 o;
    // f = e2m1 * 2^-14 exactly, so (f * 2^14) * scale is the CPU's e2m1 * scale
    o.x = nvfp4_pack_bf16x2(f[0] * kE2m1F16Scale * scale, f[1] * kE2m1F16Scale * scale);
    o.y = nvfp4_pack_bf16x2(f[2] * kE2m1F16Scale * scale, f[3] * kE2m1F16Scale * scale);
    o.z = nvfp4_pack_bf16x2(f[4] * kE2m1F16Scale * scale, f[5] * kE2m1F16Scale * scale);
    o.w = nvfp4_pack_bf16x2(f[6] * kE2m1F16Scale * scale, f[7] * kE2m1F16Scale * scale);
    reinterpret_cast<uint4*>(out)[q] = o;
  }
}

// rm_moe_gate_up over NVFP4 experts: w13 [E, 2 * inter, hidden] (device layout), scales s13, globals
// g13 [2E] (each expert's gate, then its up projection). Grid and mapping as rm_moe_gate_up: a warp
// per intermediate row of an active expert, its pairs 8 at a time.
RM_KERNEL void rm_moe_gate_up_nvfp4(float* h, const uint8_t* w13, const uint8_t* s13,
                                    const float* g13, const float* x, const int* offsets,
                                    const int* sortedPairs, const int* activeExperts,
                                    const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (i >= inter) return;
  const int e = activeExperts[blockIdx.y];
  const size_t g = static_cast<size_t>(e) * 2 * inter + i;
  const size_t rowBytes = hidden / 2, scaleBytes = hidden / kNvfp4Group;
  const uint8_t* const rows[2] = {w13 + g * rowBytes, w13 + (g + inter) * rowBytes};
  const uint8_t* const scales[2] = {s13 + g * scaleBytes, s13 + (g + inter) * scaleBytes};
  const float global[2] = {__ldg(g13 + 2 * e), __ldg(g13 + 2 * e + 1)};
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
      warp_rows_dot_nvfp4<2, 1, 4>(rows, scales, global, x1, 1, hidden, a1);
      acc[0][0] = a1[0][0];
      acc[1][0] = a1[1][0];
    } else {
      warp_rows_dot_nvfp4<2, kMoeTokensPerPass, 1>(rows, scales, global, xr, nt, hidden, acc);
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

// rm_moe_down over NVFP4 experts: w2 [E, hidden, inter], scales s2, globals g2 [E]; y[p, d] =
// routeWeights[p] * (down_e[d] . h[p]). Grid and mapping as rm_moe_down: a warp per output dim.
RM_KERNEL void rm_moe_down_nvfp4(float* y, const uint8_t* w2, const uint8_t* s2, const float* g2,
                                 const float* h, const float* routeWeights, const int* offsets,
                                 const int* sortedPairs, const int* activeExperts,
                                 const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int d = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (d >= hidden) return;
  const int e = activeExperts[blockIdx.y];
  const size_t g = static_cast<size_t>(e) * hidden + d;
  const uint8_t* const rows[1] = {w2 + g * (inter / 2)};
  const uint8_t* const scales[1] = {s2 + g * (inter / kNvfp4Group)};
  const float global[1] = {__ldg(g2 + e)};
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
      warp_rows_dot_nvfp4<1, 1, 8>(rows, scales, global, h1, 1, inter, a1);
      acc[0][0] = a1[0][0];
    } else {
      warp_rows_dot_nvfp4<1, kMoeTokensPerPass, 2>(rows, scales, global, hr, nt, inter, acc);
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
