// One-token (batch-1 decode) kernels over FP8 block-scaled and NVFP4 weights: the n = 1 forms of
// fp8_weights.cu's and nvfp4_weights.cu's GEMVs and CUDA-core experts, which the host takes for a
// lone token (kernel option quant-one-token).
//
// Why separate kernels: the general kernels carry the multi-token passes (4 or 8 tokens), whose
// accumulators set the register count of the whole kernel (rm_moe_gate_up_fp8 128, rm_moe_down_nvfp4
// 255 registers on sm_90), and give a warp one or two rows: at one token an FP8 warp then streams
// 1.4-4 KB (an NVFP4 one 0.7-2 KB) with 3-8 loads of 16 bytes in flight per lane before it exits,
// against the bf16 one-token kernels' 8-11 KB and 16 loads. Here a warp takes several rows (the
// experts' gate|up: 2 intermediate rows = 4 rows, 16 loads of 16 bytes in flight per lane at FP8
// hidden = 2048; down 4 rows), issues every load of a group of chunks (and their
// scales) before the first use, and loads each chunk's activations once for all its rows; the
// registers are the one-token path's alone, capped where more resident warps measured faster.
//
// Sums: a lane takes the chunks lane, lane + 32, ... of each row in ascending order, sums each
// chunk's (each NVFP4 group's) 16 products in k order, adds that sum times the block's (group's)
// scale to its accumulator, and the warp reduces by warp_sum: the same expressions in the same
// order as warp_rows_dot_fp8 / warp_rows_dot_nvfp4 at one token, whatever the rows per warp or
// the unroll, so every output is bit-identical to the general kernel's at n = 1.
//
// Experts: an active expert has at least one pair, so a warp starts its weight loads once it knows
// the expert, without waiting for the pair list (do-while); an expert with more pairs (more than one
// token) streams its rows again for each, correct but meant for one token only.
#pragma once
#include "nvfp4_weights.cu"

// Chunks of 16 bytes per row and lane in flight per group (FP8: 16 codes, NVFP4: 32).
constexpr int kQ1Unroll = 4;
constexpr int kQ1Nvfp4Unroll = 2;  // a 2048-column NVFP4 row is 2 chunks a lane

// One group of an FP8 row set's chunks for one lane: chunks c, c + LANES, ..., c + LANES * (U - 1)
// of each of the R rows and their blocks' scales (zeros past the end).
template <int R, int U, int LANES>
__device__ __forceinline__ void fp8_q1_load(const uint8_t* const (&w)[R],
                                            const float* const (&s)[R], int c, int chunks,
                                            uint4 (&wv)[R][U], float (&sc)[R][U]) {
#pragma unroll
  for (int u = 0; u < U; u++) {
    const int cc = c + LANES * u;
#pragma unroll
    for (int r = 0; r < R; r++) {
      wv[r][u] = cc < chunks ? __ldcs(reinterpret_cast<const uint4*>(w[r]) + cc)
                             : make_uint4(0u, 0u, 0u, 0u);
      sc[r][u] = cc < chunks ? __ldg(s[r] + (cc >> 3)) : 0.f;
    }
  }
}

// acc[r] += the group's products: per chunk its 16 products summed in k order, times the scale.
template <int R, int U, int LANES>
__device__ __forceinline__ void fp8_q1_use(const uint4 (&wv)[R][U], const float (&sc)[R][U],
                                           const float* x, int c, int chunks, float (&acc)[R]) {
#pragma unroll
  for (int u = 0; u < U; u++) {
    const int cc = c + LANES * u;
    if (cc >= chunks) break;
    float xv[16];
    load_f32x16(x + static_cast<size_t>(cc) * 16, xv);
#pragma unroll
    for (int r = 0; r < R; r++) {
      float wf[16];
      e4m3x4_to_f32(wv[r][u].x, wf);
      e4m3x4_to_f32(wv[r][u].y, wf + 4);
      e4m3x4_to_f32(wv[r][u].z, wf + 8);
      e4m3x4_to_f32(wv[r][u].w, wf + 12);
      float d = 0.f;
#pragma unroll
      for (int i = 0; i < 16; i++) d += wf[i] * xv[i];
      acc[r] = fmaf(sc[r][u], d, acc[r]);
    }
  }
}

// acc[r] += dequant(w[r]) . x over K for one token, per thread `lane` of a group of LANES threads
// that share the rows (a warp: LANES = 32, warp_rows_dot_fp8<R, 1, *>'s sums; or the S warps of a
// split row: 32 * S), which the caller reduces.
template <int R, int U, int LANES>
__device__ __forceinline__ void fp8_rows_dot1(const uint8_t* const (&w)[R],
                                              const float* const (&s)[R], const float* x, int K,
                                              int lane, float (&acc)[R]) {
  if ((K & 15) == 0) {
    const int chunks = K >> 4;
    for (int c = lane; c < chunks; c += LANES * U) {
      uint4 wv[R][U];
      float sc[R][U];
      fp8_q1_load<R, U, LANES>(w, s, c, chunks, wv, sc);
      fp8_q1_use<R, U, LANES>(wv, sc, x, c, chunks, acc);
    }
  } else {
    for (int k = lane; k < K; k += LANES) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        const float wk = e4m3_to_f32(w[r][k]) * s[r][k / kFp8Block];
        acc[r] += wk * x[k];
      }
    }
  }
}

// fp8_rows_dot1 in a kernel that may load weights before the PDL wait (WF, weights first): it runs
// the prologue itself, where rows of one group of chunks a lane (K % 16 == 0, K <= 16 * LANES *
// U: 2048 at U = 4) let the lane's code and scale loads go out first, so that their DRAM latency
// overlaps the previous kernel's tail (codes and scales are weights, which no kernel writes; x is
// read after the wait), as do rows of two groups where a warp has at most 2 rows (the same
// registers); other shapes wait first. Without WF it is fp8_rows_dot1 (the kernel has
// run the prologue). The same loads, products and order as fp8_rows_dot1, hence the same bits. One
// group only: a loop after a group issued early let the compiler hold two groups and spill.
template <int R, int U, int LANES, bool WF>
__device__ __forceinline__ void fp8_rows_dot1_wait(const uint8_t* const (&w)[R],
                                                   const float* const (&s)[R], const float* x,
                                                   int K, int lane, float (&acc)[R]) {
  if (WF && (K & 15) == 0 && (K >> 4) <= LANES * U) {
    uint4 wv[R][U];
    float sc[R][U];
    fp8_q1_load<R, U, LANES>(w, s, lane, K >> 4, wv, sc);
    rm_pdl_prologue();
    fp8_q1_use<R, U, LANES>(wv, sc, x, lane, K >> 4, acc);
    return;
  }
  if (WF && R <= 2 && (K & 15) == 0 && (K >> 4) <= 2 * LANES * U) {
    // Two groups of at most 2 rows hold what one group of 4 rows does (the shared experts' down
    // rows of 2816 columns).
    uint4 wv0[R][U], wv1[R][U];
    float sc0[R][U], sc1[R][U];
    fp8_q1_load<R, U, LANES>(w, s, lane, K >> 4, wv0, sc0);
    fp8_q1_load<R, U, LANES>(w, s, lane + LANES * U, K >> 4, wv1, sc1);
    rm_pdl_prologue();
    fp8_q1_use<R, U, LANES>(wv0, sc0, x, lane, K >> 4, acc);
    fp8_q1_use<R, U, LANES>(wv1, sc1, x, lane + LANES * U, K >> 4, acc);
    return;
  }
  if (WF) rm_pdl_prologue();
  fp8_rows_dot1<R, U, LANES>(w, s, x, K, lane, acc);
}

// acc[r] += dequant(w[r]) . x over K for one token, per thread `lane` of LANES (as fp8_rows_dot1;
// LANES = 32: warp_rows_dot_nvfp4<R, 1, *>'s sums).
template <int R, int U, int LANES>
__device__ __forceinline__ void nvfp4_rows_dot1(const uint8_t* const (&w)[R],
                                                const uint8_t* const (&s)[R],
                                                const float (&global)[R], const float* x, int K,
                                                int lane, float (&acc)[R]) {
  if ((K & 31) == 0) {
    const int chunks = K >> 5;
    for (int c = lane; c < chunks; c += LANES * U) {
      uint4 wv[R][U];
      uint32_t sv[R][U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int cc = c + LANES * u;
#pragma unroll
        for (int r = 0; r < R; r++) {
          const bool ok = cc < chunks;
          wv[r][u] = ok ? __ldcs(reinterpret_cast<const uint4*>(w[r]) + cc)
                        : make_uint4(0u, 0u, 0u, 0u);
          sv[r][u] = ok ? __ldg(reinterpret_cast<const unsigned short*>(s[r]) + cc) : 0u;
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int cc = c + LANES * u;
        if (cc >= chunks) break;
#pragma unroll
        for (int half = 0; half < 2; half++) {
          float xv[16];
          load_f32x16(x + static_cast<size_t>(cc) * 32 + 16 * half, xv);
#pragma unroll
          for (int r = 0; r < R; r++) {
            float wf[16];
            e2m1x8_to_f32(half == 0 ? wv[r][u].x : wv[r][u].z, wf);
            e2m1x8_to_f32(half == 0 ? wv[r][u].y : wv[r][u].w, wf + 8);
            const float scale = e4m3_to_f32(static_cast<uint8_t>(sv[r][u] >> (8 * half))) *
                                global[r] * kE2m1F16Scale;
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 16; i++) d += wf[i] * xv[i];
            acc[r] = fmaf(scale, d, acc[r]);
          }
        }
      }
    }
  } else {
    const int groups = K >> 4;
    for (int gi = lane; gi < groups; gi += LANES) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint2 v = __ldcs(reinterpret_cast<const uint2*>(w[r]) + gi);
        float wf[16];
        e2m1x8_to_f32(v.x, wf);
        e2m1x8_to_f32(v.y, wf + 8);
        const float scale = e4m3_to_f32(s[r][gi]) * global[r] * kE2m1F16Scale;
        const float* xp = x + static_cast<size_t>(gi) * 16;
        float d = 0.f;
#pragma unroll
        for (int i = 0; i < 16; i++) d += wf[i] * __ldg(xp + i);
        acc[r] = fmaf(scale, d, acc[r]);
      }
    }
  }
}

__device__ __forceinline__ int q1_warp() {
  return blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
}

// ---- FP8 ----
// Bodies with WF run the PDL prologue themselves (fp8_rows_dot1_wait; a warp with no rows exits
// before it, touching no memory); without WF the kernel has run it first.

// One token, R consecutive rows of an FP8 stack per warp: rm_gemv_fp8's sums at n = 1. Rows past
// the end re-read the last row and are not stored.
template <int R, bool WF>
__device__ __forceinline__ void fp8_gemv1_body(const Fp8StackedRows& m, const float* x) {
  const int rows = m.M1 + m.M2;
  const int g0 = q1_warp() * R;
  if (g0 >= rows) return;
  const uint8_t* w[R];
  const float* s[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int g = min(g0 + r, rows - 1);
    w[r] = m.codes(g);
    s[r] = m.scales(g);
  }
  float acc[R] = {};
  fp8_rows_dot1_wait<R, kQ1Unroll, 32, WF>(w, s, x, m.K, threadIdx.x & 31, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float v = warp_sum(acc[r]);
    if (g0 + r < rows && (threadIdx.x & 31) == 0) *m.out(g0 + r, 0) = v;
  }
}

// out[j] = silu(gate_j . x) * (up_j . x) for one token, columns j0 .. j0 + C - 1 (their gate and
// up rows; parts of `inter` rows): rm_gemv_swiglu_fp8's sums at n = 1.
template <int C, bool WF>
__device__ __forceinline__ void fp8_swiglu1_cols(float* out, const uint8_t* W, const float* S,
                                                 const float* x, int inter, int K, int j0) {
  const uint8_t* w[2 * C];
  const float* s[2 * C];
#pragma unroll
  for (int c = 0; c < C; c++) {
    const size_t j = min(j0 + c, inter - 1);
    w[c] = W + j * K;
    w[C + c] = W + (inter + j) * K;
    s[c] = fp8_scale_row(S, j, inter, K);
    s[C + c] = fp8_scale_row(S, inter + j, inter, K);
  }
  float acc[2 * C] = {};
  fp8_rows_dot1_wait<2 * C, kQ1Unroll, 32, WF>(w, s, x, K, threadIdx.x & 31, acc);
#pragma unroll
  for (int c = 0; c < C; c++) {
    const float g = warp_sum(acc[c]), u = warp_sum(acc[C + c]);
    if (j0 + c < inter && (threadIdx.x & 31) == 0) out[j0 + c] = (g / (1.f + expf(-g))) * u;
  }
}

// The shared experts inside the routed experts' launches (one token): the launch's first
// sharedY grid rows are the shared experts' blocks, numbered in grid order, a warp taking the
// gate|up warps' 2 columns, or 2 down rows (so that a lane's two groups of 2816-column rows fit
// the routed warps' registers: fp8_rows_dot1_wait). A row's sum does not depend on the
// rows per warp, so the outputs are the separate SwiGLU GEMV's and GEMV's bits. Their weights
// do not depend on the routing, so with WF (rows of up to two groups a lane) their loads go out
// before the wait, overlapping the router (gate|up) or the gate|up launch (down).
__device__ __forceinline__ int q1_shared_warp() {
  return (blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
}

// rm_moe_gate_up_fp8's sums for one token: C consecutive intermediate rows per warp (gate and up
// rows each) of the block's active expert (grid row sharedY + slot), each of its pairs in turn.
template <int C>
__device__ __forceinline__ void fp8_gate_up1_body(float* h, const uint8_t* w13, const float* s13,
                                                  const float* x, const int* offsets,
                                                  const int* sortedPairs, const int* activeExperts,
                                                  const int* activeCount, int hidden, int inter,
                                                  int topK, int slot) {
  const int count = *activeCount;
  const int e = activeExperts[slot];
  if (slot >= count) return;
  const int i0 = q1_warp() * C;
  if (i0 >= inter) return;
  const uint8_t* w[2 * C];
  const float* s[2 * C];
#pragma unroll
  for (int c = 0; c < C; c++) {
    const size_t g = static_cast<size_t>(e) * 2 * inter + min(i0 + c, inter - 1);
    w[c] = w13 + g * hidden;
    w[C + c] = w13 + (g + inter) * hidden;
    s[c] = fp8_scale_row(s13, g, inter, hidden);
    s[C + c] = fp8_scale_row(s13, g + inter, inter, hidden);
  }
  const int begin = offsets[e], end = offsets[e + 1];
  int q = begin;  // an active expert has at least one pair
  do {
    const int pair = sortedPairs[q];
    float acc[2 * C] = {};
    fp8_rows_dot1<2 * C, kQ1Unroll, 32>(w, s, x + static_cast<size_t>(pair / topK) * hidden,
                                        hidden, threadIdx.x & 31, acc);
#pragma unroll
    for (int c = 0; c < C; c++) {
      const float gs = warp_sum(acc[c]), us = warp_sum(acc[C + c]);
      if (i0 + c < inter && (threadIdx.x & 31) == 0) {
        h[static_cast<size_t>(pair) * inter + i0 + c] = (gs / (1.f + expf(-gs))) * us;
      }
    }
  } while (++q < end);
}

// rm_moe_down_fp8's sums for one token: R consecutive output dims per warp (grid row sharedY +
// slot).
template <int R>
__device__ __forceinline__ void fp8_down1_body(float* y, const uint8_t* w2, const float* s2,
                                               const float* h, const float* routeWeights,
                                               const int* offsets, const int* sortedPairs,
                                               const int* activeExperts, const int* activeCount,
                                               int hidden, int inter, int slot) {
  const int count = *activeCount;
  const int e = activeExperts[slot];
  if (slot >= count) return;
  const int d0 = q1_warp() * R;
  if (d0 >= hidden) return;
  const uint8_t* w[R];
  const float* s[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const size_t g = static_cast<size_t>(e) * hidden + min(d0 + r, hidden - 1);
    w[r] = w2 + g * inter;
    s[r] = fp8_scale_row(s2, g, hidden, inter);
  }
  const int begin = offsets[e], end = offsets[e + 1];
  int q = begin;
  do {
    const int pair = sortedPairs[q];
    float acc[R] = {};
    fp8_rows_dot1<R, kQ1Unroll, 32>(w, s, h + static_cast<size_t>(pair) * inter, inter,
                                    threadIdx.x & 31, acc);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const float v = warp_sum(acc[r]);
      if (d0 + r < hidden && (threadIdx.x & 31) == 0) {
        y[static_cast<size_t>(pair) * hidden + d0 + r] = routeWeights[pair] * v;
      }
    }
  } while (++q < end);
}

// ---- NVFP4 ----

// fp8_gemv1_body over an NVFP4 stack: rm_gemv_nvfp4's sums at n = 1.
template <int R>
__device__ __forceinline__ void nvfp4_gemv1_body(const Nvfp4StackedRows& m, const float* x) {
  const int rows = m.M1 + m.M2;
  const int g0 = q1_warp() * R;
  if (g0 >= rows) return;
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
  float acc[R] = {};
  nvfp4_rows_dot1<R, kQ1Nvfp4Unroll, 32>(w, s, gl, x, m.K, threadIdx.x & 31, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float v = warp_sum(acc[r]);
    if (g0 + r < rows && (threadIdx.x & 31) == 0) *m.out(g0 + r, 0) = v;
  }
}

// rm_gemv_swiglu_nvfp4's sums at n = 1, C consecutive columns per warp.
template <int C>
__device__ __forceinline__ void nvfp4_swiglu1_body(float* out, const uint8_t* W, const uint8_t* S,
                                                   const float* G, const float* x, int inter,
                                                   int K) {
  const int j0 = q1_warp() * C;
  if (j0 >= inter) return;
  const size_t rowBytes = K / 2, scaleBytes = K / kNvfp4Group;
  const uint8_t* w[2 * C];
  const uint8_t* s[2 * C];
  float gl[2 * C];
  const float gGate = __ldg(G), gUp = __ldg(G + 1);
#pragma unroll
  for (int c = 0; c < C; c++) {
    const size_t j = min(j0 + c, inter - 1);
    w[c] = W + j * rowBytes;
    w[C + c] = W + (inter + j) * rowBytes;
    s[c] = S + j * scaleBytes;
    s[C + c] = S + (inter + j) * scaleBytes;
    gl[c] = gGate;
    gl[C + c] = gUp;
  }
  float acc[2 * C] = {};
  nvfp4_rows_dot1<2 * C, kQ1Nvfp4Unroll, 32>(w, s, gl, x, K, threadIdx.x & 31, acc);
#pragma unroll
  for (int c = 0; c < C; c++) {
    const float g = warp_sum(acc[c]), u = warp_sum(acc[C + c]);
    if (j0 + c < inter && (threadIdx.x & 31) == 0) out[j0 + c] = (g / (1.f + expf(-g))) * u;
  }
}

// rm_moe_gate_up_nvfp4's sums for one token, C consecutive intermediate rows per warp.
template <int C>
__device__ __forceinline__ void nvfp4_gate_up1_body(float* h, const uint8_t* w13,
                                                    const uint8_t* s13, const float* g13,
                                                    const float* x, const int* offsets,
                                                    const int* sortedPairs,
                                                    const int* activeExperts,
                                                    const int* activeCount, int hidden, int inter,
                                                    int topK) {
  const int count = *activeCount;
  const int e = activeExperts[blockIdx.y];
  if (static_cast<int>(blockIdx.y) >= count) return;
  const int i0 = q1_warp() * C;
  if (i0 >= inter) return;
  const size_t rowBytes = hidden / 2, scaleBytes = hidden / kNvfp4Group;
  const float gGate = __ldg(g13 + 2 * e), gUp = __ldg(g13 + 2 * e + 1);
  const uint8_t* w[2 * C];
  const uint8_t* s[2 * C];
  float gl[2 * C];
#pragma unroll
  for (int c = 0; c < C; c++) {
    const size_t g = static_cast<size_t>(e) * 2 * inter + min(i0 + c, inter - 1);
    w[c] = w13 + g * rowBytes;
    w[C + c] = w13 + (g + inter) * rowBytes;
    s[c] = s13 + g * scaleBytes;
    s[C + c] = s13 + (g + inter) * scaleBytes;
    gl[c] = gGate;
    gl[C + c] = gUp;
  }
  const int begin = offsets[e], end = offsets[e + 1];
  int q = begin;
  do {
    const int pair = sortedPairs[q];
    float acc[2 * C] = {};
    nvfp4_rows_dot1<2 * C, kQ1Nvfp4Unroll, 32>(
        w, s, gl, x + static_cast<size_t>(pair / topK) * hidden, hidden, threadIdx.x & 31, acc);
#pragma unroll
    for (int c = 0; c < C; c++) {
      const float gs = warp_sum(acc[c]), us = warp_sum(acc[C + c]);
      if (i0 + c < inter && (threadIdx.x & 31) == 0) {
        h[static_cast<size_t>(pair) * inter + i0 + c] = (gs / (1.f + expf(-gs))) * us;
      }
    }
  } while (++q < end);
}

// rm_moe_down_nvfp4's sums for one token, R consecutive output dims per warp.
template <int R>
__device__ __forceinline__ void nvfp4_down1_body(float* y, const uint8_t* w2, const uint8_t* s2,
                                                 const float* g2, const float* h,
                                                 const float* routeWeights, const int* offsets,
                                                 const int* sortedPairs, const int* activeExperts,
                                                 const int* activeCount, int hidden, int inter) {
  const int count = *activeCount;
  const int e = activeExperts[blockIdx.y];
  if (static_cast<int>(blockIdx.y) >= count) return;
  const int d0 = q1_warp() * R;
  if (d0 >= hidden) return;
  const float global = __ldg(g2 + e);
  const uint8_t* w[R];
  const uint8_t* s[R];
  float gl[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const size_t g = static_cast<size_t>(e) * hidden + min(d0 + r, hidden - 1);
    w[r] = w2 + g * (inter / 2);
    s[r] = s2 + g * (inter / kNvfp4Group);
    gl[r] = global;
  }
  const int begin = offsets[e], end = offsets[e + 1];
  int q = begin;
  do {
    const int pair = sortedPairs[q];
    float acc[R] = {};
    nvfp4_rows_dot1<R, kQ1Nvfp4Unroll, 32>(w, s, gl, h + static_cast<size_t>(pair) * inter, inter,
                                           threadIdx.x & 31, acc);
#pragma unroll
    for (int r = 0; r < R; r++) {
      const float v = warp_sum(acc[r]);
      if (d0 + r < hidden && (threadIdx.x & 31) == 0) {
        y[static_cast<size_t>(pair) * hidden + d0 + r] = routeWeights[pair] * v;
      }
    }
  } while (++q < end);
}

// ---- Kernels ----
// Shapes chosen on an H200 at V2-Lite's (64 experts top-6, hidden 2048, inter 1408; one token, 6
// distinct experts a call out of 64, so the codes come from HBM), against rows per warp 1-8 and
// occupancy caps; the caps (__launch_bounds__ minimum blocks) trade registers for resident warps
// (no spills at these caps on sm_90; a tighter one spilled):
//   rm_moe_gate_up1_fp8   2 intermediate rows (4 rows) a warp, 4 blocks/SM: 12.6 us (general 22.8)
//   rm_moe_down1_fp8      4 rows a warp, 4 blocks/SM: 10.1 us (general 20.1)
//   rm_moe_gate_up1_nvfp4 2 intermediate rows a warp, 4 blocks/SM: 14.8 us (general 32.3)
//   rm_moe_down1_nvfp4    4 rows a warp, 4 blocks/SM: 11.5 us (general 38.6)
//   rm_gemv1_fp8 2 rows a warp, rm_gemv1_nvfp4 4 rows (q|kv_a 6.0 / 6.4 us, general 6.8 / 8.0)
//   rm_gemv_swiglu1_fp8 / _nvfp4 2 columns a warp (shared experts 7.4 / 7.4 us, general 10.6 / 12.1)
// Grids: 4 warps a block, blocks over the rows a block covers (host: Fp8Kernels, Nvfp4Kernels,
// MoeKernels, whose constants mirror these).
constexpr int kQ1Fp8GemvRows = 2;
constexpr int kQ1Fp8SwigluCols = 2;
constexpr int kQ1Fp8GateUpCols = 2;
constexpr int kQ1Fp8DownRows = 4;
constexpr int kQ1Fp8SharedDownRows = 2;  // the shared experts' down rows in rm_moe_down1_fp8
constexpr int kQ1Nvfp4GemvRows = 4;
constexpr int kQ1Nvfp4SwigluCols = 2;
constexpr int kQ1Nvfp4GateUpCols = 2;
constexpr int kQ1Nvfp4DownRows = 4;

// The shared experts' blocks of rm_moe_gate_up1_fp8: hs = rm_gemv_swiglu1_fp8 of the shared
// gate|up matrix on x.
template <bool WF>
__device__ __forceinline__ void fp8_shared_gate_up1(float* hs, const uint8_t* ws13,
                                                    const float* ss13, const float* x, int hidden,
                                                    int interS) {
  const int j0 = q1_shared_warp() * kQ1Fp8GateUpCols;
  if (j0 >= interS) return;
  fp8_swiglu1_cols<kQ1Fp8GateUpCols, WF>(hs, ws13, ss13, x, interS, hidden, j0);
}

// The shared experts' blocks of rm_moe_down1_fp8: ys = rm_gemv1_fp8 of the shared down matrix on
// hs.
template <bool WF>
__device__ __forceinline__ void fp8_shared_down1(float* ys, const uint8_t* ws2, const float* ss2,
                                                 int partRowsS, const float* hs, int hidden,
                                                 int interS) {
  constexpr int R = kQ1Fp8SharedDownRows;
  const int d0 = q1_shared_warp() * R;
  if (d0 >= hidden) return;
  const uint8_t* w[R];
  const float* s[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const size_t g = min(d0 + r, hidden - 1);
    w[r] = ws2 + g * interS;
    s[r] = fp8_scale_row(ss2, g, partRowsS, interS);
  }
  float acc[R] = {};
  fp8_rows_dot1_wait<R, kQ1Unroll, 32, WF>(w, s, hs, interS, threadIdx.x & 31, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
    const float v = warp_sum(acc[r]);
    if (d0 + r < hidden && (threadIdx.x & 31) == 0) ys[d0 + r] = v;
  }
}

// The _wf kernels are the same kernels with WF (weights first: fp8_rows_dot1_wait; kernel option
// quant-weights-first), the same bits.

// rm_gemv_fp8 at n = 1 (same arguments but n).
RM_KERNEL void rm_gemv1_fp8(float* y1, const uint8_t* W1, const float* S1, int P1, int M1,
                            float* y2, const uint8_t* W2, const float* S2, int P2, int M2,
                            const float* x, int K) {
  rm_pdl_prologue();
  fp8_gemv1_body<kQ1Fp8GemvRows, false>(
      Fp8StackedRows{y1, W1, S1, P1, M1, y2, W2, S2, P2, M2, K}, x);
}

RM_KERNEL void rm_gemv1_fp8_wf(float* y1, const uint8_t* W1, const float* S1, int P1, int M1,
                               float* y2, const uint8_t* W2, const float* S2, int P2, int M2,
                               const float* x, int K) {
  fp8_gemv1_body<kQ1Fp8GemvRows, true>(Fp8StackedRows{y1, W1, S1, P1, M1, y2, W2, S2, P2, M2, K},
                                       x);
}

// rm_gemv_swiglu_fp8 at n = 1.
RM_KERNEL void rm_gemv_swiglu1_fp8(float* out, const uint8_t* W, const float* S, const float* x,
                                   int inter, int K) {
  rm_pdl_prologue();
  const int j0 = q1_warp() * kQ1Fp8SwigluCols;
  if (j0 >= inter) return;
  fp8_swiglu1_cols<kQ1Fp8SwigluCols, false>(out, W, S, x, inter, K, j0);
}

RM_KERNEL void rm_gemv_swiglu1_fp8_wf(float* out, const uint8_t* W, const float* S,
                                      const float* x, int inter, int K) {
  const int j0 = q1_warp() * kQ1Fp8SwigluCols;
  if (j0 >= inter) return;
  fp8_swiglu1_cols<kQ1Fp8SwigluCols, true>(out, W, S, x, inter, K, j0);
}

// rm_moe_gate_up_fp8 for one token (its arguments, then the shared experts'): grid (blocks of
// the expert rows, sharedY + active experts). With sharedY > 0 the first sharedY grid rows
// compute the shared experts' SwiGLU intermediate hs[interS] (fp8_shared_gate_up1: the shared
// gate|up matrix ws13, scales ss13 in parts of interS rows).
RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_gate_up1_fp8(float* h, const uint8_t* w13, const float* s13, const float* x,
                        const int* offsets, const int* sortedPairs, const int* activeExperts,
                        const int* activeCount, int hidden, int inter, int topK, float* hs,
                        const uint8_t* ws13, const float* ss13, int interS, int sharedY) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) < sharedY) {
    fp8_shared_gate_up1<false>(hs, ws13, ss13, x, hidden, interS);
    return;
  }
  fp8_gate_up1_body<kQ1Fp8GateUpCols>(h, w13, s13, x, offsets, sortedPairs, activeExperts,
                                      activeCount, hidden, inter, topK, blockIdx.y - sharedY);
}

RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_gate_up1_fp8_wf(float* h, const uint8_t* w13, const float* s13, const float* x,
                           const int* offsets, const int* sortedPairs, const int* activeExperts,
                           const int* activeCount, int hidden, int inter, int topK, float* hs,
                           const uint8_t* ws13, const float* ss13, int interS, int sharedY) {
  if (static_cast<int>(blockIdx.y) < sharedY) {
    fp8_shared_gate_up1<true>(hs, ws13, ss13, x, hidden, interS);
    return;
  }
  rm_pdl_prologue();
  fp8_gate_up1_body<kQ1Fp8GateUpCols>(h, w13, s13, x, offsets, sortedPairs, activeExperts,
                                      activeCount, hidden, inter, topK, blockIdx.y - sharedY);
}

// rm_moe_down_fp8 for one token (its arguments, then the shared experts'): grid (blocks of the
// output rows, sharedY + active experts). With sharedY > 0 the first sharedY grid rows compute
// the shared experts' output ys[hidden] (fp8_shared_down1: the shared down matrix ws2, scales ss2
// in parts of partRowsS rows, interS columns) from hs.
RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_down1_fp8(float* y, const uint8_t* w2, const float* s2, const float* h,
                     const float* routeWeights, const int* offsets, const int* sortedPairs,
                     const int* activeExperts, const int* activeCount, int hidden, int inter,
                     float* ys, const uint8_t* ws2, const float* ss2, int partRowsS,
                     const float* hs, int interS, int sharedY) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) < sharedY) {
    fp8_shared_down1<false>(ys, ws2, ss2, partRowsS, hs, hidden, interS);
    return;
  }
  fp8_down1_body<kQ1Fp8DownRows>(y, w2, s2, h, routeWeights, offsets, sortedPairs, activeExperts,
                                 activeCount, hidden, inter, blockIdx.y - sharedY);
}

RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_down1_fp8_wf(float* y, const uint8_t* w2, const float* s2, const float* h,
                        const float* routeWeights, const int* offsets, const int* sortedPairs,
                        const int* activeExperts, const int* activeCount, int hidden, int inter,
                        float* ys, const uint8_t* ws2, const float* ss2, int partRowsS,
                        const float* hs, int interS, int sharedY) {
  if (static_cast<int>(blockIdx.y) < sharedY) {
    fp8_shared_down1<true>(ys, ws2, ss2, partRowsS, hs, hidden, interS);
    return;
  }
  rm_pdl_prologue();
  fp8_down1_body<kQ1Fp8DownRows>(y, w2, s2, h, routeWeights, offsets, sortedPairs, activeExperts,
                                 activeCount, hidden, inter, blockIdx.y - sharedY);
}

// rm_gemv_nvfp4 at n = 1 (same arguments but n).
RM_KERNEL void rm_gemv1_nvfp4(float* y1, const uint8_t* W1, const uint8_t* S1, const float* G1,
                              int P1, int M1, float* y2, const uint8_t* W2, const uint8_t* S2,
                              const float* G2, int P2, int M2, const float* x, int K) {
  rm_pdl_prologue();
  nvfp4_gemv1_body<kQ1Nvfp4GemvRows>(
      Nvfp4StackedRows{y1, W1, S1, G1, P1, M1, y2, W2, S2, G2, P2, M2, K}, x);
}

// rm_gemv_swiglu_nvfp4 at n = 1.
RM_KERNEL void rm_gemv_swiglu1_nvfp4(float* out, const uint8_t* W, const uint8_t* S,
                                     const float* G, const float* x, int inter, int K) {
  rm_pdl_prologue();
  nvfp4_swiglu1_body<kQ1Nvfp4SwigluCols>(out, W, S, G, x, inter, K);
}

// rm_moe_gate_up_nvfp4 for one token (same arguments).
RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_gate_up1_nvfp4(float* h, const uint8_t* w13, const uint8_t* s13, const float* g13,
                          const float* x, const int* offsets, const int* sortedPairs,
                          const int* activeExperts, const int* activeCount, int hidden, int inter,
                          int topK) {
  rm_pdl_prologue();
  nvfp4_gate_up1_body<kQ1Nvfp4GateUpCols>(h, w13, s13, g13, x, offsets, sortedPairs,
                                          activeExperts, activeCount, hidden, inter, topK);
}

// rm_moe_down_nvfp4 for one token (same arguments).
RM_KERNEL void __launch_bounds__(128, 4)
    rm_moe_down1_nvfp4(float* y, const uint8_t* w2, const uint8_t* s2, const float* g2,
                       const float* h, const float* routeWeights, const int* offsets,
                       const int* sortedPairs, const int* activeExperts, const int* activeCount,
                       int hidden, int inter) {
  rm_pdl_prologue();
  nvfp4_down1_body<kQ1Nvfp4DownRows>(y, w2, s2, g2, h, routeWeights, offsets, sortedPairs,
                                     activeExperts, activeCount, hidden, inter);
}
