// Tensor-core routed experts over ModelOpt NVFP4 weights (W4A16): moe_mma.cu's kernels with the
// weights read as e2m1 codes (half a byte each, a quarter of the bf16 bytes) and decoded in
// registers, scales included, into exact bf16 A fragments.
//   rm_moe_gate_up_mma_nvfp4  hs[q] = bf16(silu(W_gate[e] x[t]) * (W_up[e] x[t])), as rm_moe_gate_up_mma;
//   rm_moe_down_mma_nvfp4     y[p] = weight[p] * W_down[e] hs[q], as rm_moe_down_mma;
//   rm_moe_gate_up_mma8_nvfp4, rm_moe_down_mma8_nvfp4: the same in passes of up to 8 tokens.
// Layouts as nvfp4_weights.cu: w13 [E, 2 * inter, hidden] with globals [2E] (gate, up of each
// expert), w2 [E, hidden, inter] with globals [E].
//
// Mapping: as moe_mma.cu (grid (ceil(rows / 64), active experts), 4 warps of 16 output rows, the
// pass's tokens as the N side of mma.sync m16n8k16 bf16 -> f32). K runs in chunks of 128: lane
// (g = lane / 4, q = lane % 4) loads 16 bytes = 32 codes at k = 128c + 32q of rows g and g + 8, and
// word i of that load (8 codes, k0 = 128c + 32q + 8i) feeds two mmas of the chunk: mma (i, h) takes
// the elements k0 + 4h .. k0 + 4h + 3 of each row as its lane's A values (mma k 2q, 2q + 1 = k0 + 4h,
// + 1; 2q + 8, 2q + 9 = k0 + 4h + 2, + 3; the order of k inside one mma is free as long as A and B
// agree). So one 16-byte load of a row feeds eight mmas, and a warp's load instruction reads 64
// contiguous bytes of each of 8 rows, as the bf16 and FP8 kernels' loads do. The B fragment of lane
// (g, q) is token g's same k: staged by MoeMmaStageX / MoeMmaStageH with LANE_K = 32 (unit (4c + i,
// token, q) = the 8 bf16 at 128c + 32q + 8i), one 16-byte shared load per two mmas.
//
// Scales: a lane's 32 codes of a row span two 16-element groups, whose two e4m3 scale bytes come in
// one 2-byte load and become f16 (e4m3 * 2^7, exact). A code pair decodes to f16 e2m1 * 2^-14
// (e2m1_pair_f16x2), times the f16 scale gives e2m1 * e4m3 * 2^-7 exactly (at most 6 significant
// bits, a multiple of 2^-17, so even the f16 subnormals are exact), then bf16 exactly (via f32). The
// part's global scale (weight_scale_2) times 2^7 multiplies the finished accumulators, one multiply
// per output: W = e2m1 * e4m3 * global as the CPU reference, up to the f32 rounding of where the
// global scale is applied.
//
// Pipeline: stages of 8 loads of 16 bytes per lane in the 8-token passes (gate/up: two 128-k chunks
// of 2 row tiles; down: four chunks of 1 tile), 4 in the 32-token ones (nvfp4_mma_gate_up_chunks),
// two register sets alternating, activations staged per stage into two shared buffers. Where K %
// 32 != 0 (rows not 16-byte aligned; K % 16 == 0 always) each 16-byte load is two 8-byte ones.
//
// Determinism: a pair's result is the same mma sequence over k whichever kernel, pass or column
// carries it, so it does not depend on the other tokens of the batch nor on the pass size.
#pragma once
#include "nvfp4_weights.cu"
#include "fp8_moe_mma.cu"

constexpr int kNvfp4MmaChunkK = 128;
// Token tiles of 8 per pass of the *mma8 kernels.
constexpr int kNvfp4MmaNarrowTokenTiles = 1;

// Chunks of 128 k per stage. The 8-token passes stage 8 loads of 16 bytes per lane (gate/up: two
// chunks of 2 row tiles; down: four chunks of 1 tile). The 32-token passes stage half as many, which
// keeps gate/up within 255 registers without spills and down's two shared buffers within 48 KB.
template <int PT>
__device__ constexpr int nvfp4_mma_gate_up_chunks() {
  return PT == kNvfp4MmaNarrowTokenTiles ? 2 : 1;
}

template <int PT>
__device__ constexpr int nvfp4_mma_down_chunks() {
  return PT == kNvfp4MmaNarrowTokenTiles ? 4 : 2;
}

// 32 codes of a row at k .. k + 31 (byte k / 2), zeros past K or when !rowOk. aligned32: rows are
// 16-byte aligned (K % 32 == 0), so one 16-byte load wholly inside the row; else two 8-byte loads,
// each inside the row or skipped.
__device__ __forceinline__ uint4 nvfp4_mma_load32(const uint8_t* row, int k, int K, bool rowOk,
                                                  bool aligned32) {
  const uint8_t* p = row + k / 2;
  if (aligned32) {
    return moe_mma_load_weights(reinterpret_cast<const uint16_t*>(p), rowOk && k < K);
  }
  const uint2 lo = fp8_mma_load8(p, rowOk && k < K);
  const uint2 hi = fp8_mma_load8(p + 8, rowOk && k + 16 < K);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}

// The scales of the groups at k and k + 16 of a row (zeros past K or when !rowOk) as the f16 pair
// e4m3 * 2^7 (exact: at most 448 * 128 = 57344), bits of a __half2.
__device__ __forceinline__ uint32_t nvfp4_mma_load_scales(const uint8_t* srow, int k, int K,
                                                          bool rowOk, bool aligned32) {
  const int gi = k >> 4;
  uint32_t b;
  if (aligned32) {
    b = rowOk && k < K ? __ldg(reinterpret_cast<const unsigned short*>(srow) + (gi >> 1)) : 0u;
  } else {
    const uint32_t lo = rowOk && k < K ? __ldg(srow + gi) : 0u;
    const uint32_t hi = rowOk && k + 16 < K ? __ldg(srow + gi + 1) : 0u;
    b = lo | (hi << 8);
  }
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(b), __NV_E4M3);
  const __half2_raw s = __hmul2(__half2(h), __float2half2_rn(128.f));
  return static_cast<uint32_t>(s.x) | (static_cast<uint32_t>(s.y) << 16);
}

// Pair p of a device-order word times the f16 scale pair `scale` (both halves the group's), as an
// exact bf16 pair: e2m1 * e4m3 * 2^-7.
__device__ __forceinline__ uint32_t nvfp4_pair_bf16x2(uint32_t word, int p, __half2 scale) {
  const uint32_t bits = e2m1_pair_f16x2(word, p);
  __half2_raw r;
  r.x = static_cast<unsigned short>(bits & 0xffffu);
  r.y = static_cast<unsigned short>(bits >> 16);
  const float2 f = __half22float2(__hmul2(__half2(r), scale));
  const __nv_bfloat162_raw b = __floats2bfloat162_rn(f.x, f.y);
  return static_cast<uint32_t>(b.x) | (static_cast<uint32_t>(b.y) << 16);
}

__device__ __forceinline__ __half2 nvfp4_scale_half(uint32_t scales, int group) {
  __half2_raw r;
  r.x = r.y = static_cast<unsigned short>(group == 0 ? scales & 0xffffu : scales >> 16);
  return __half2(r);
}

// Codes and scales of stage s for MT row tiles: r[m][h][c] holds 32 codes at k = 128 (s*CH + c) +
// 32q of row g + 8h of tile m, sc[m][h][c] their two groups' scales.
template <int MT, int CH>
__device__ __forceinline__ void nvfp4_mma_load_stage(uint4 (&r)[MT][2][CH],
                                                     uint32_t (&sc)[MT][2][CH],
                                                     const uint8_t* const (&w)[MT][2],
                                                     const uint8_t* const (&srow)[MT][2],
                                                     const bool (&rowOk)[2], int s, int K,
                                                     bool aligned32) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int c = 0; c < CH; c++) {
    const int k = (s * CH + c) * kNvfp4MmaChunkK + q * 32;
#pragma unroll
    for (int h = 0; h < 2; h++) {
#pragma unroll
      for (int m = 0; m < MT; m++) {
        r[m][h][c] = nvfp4_mma_load32(w[m][h], k, K, rowOk[h], aligned32);
        sc[m][h][c] = nvfp4_mma_load_scales(srow[m][h], k, K, rowOk[h], aligned32);
      }
    }
  }
}

// acc[m][t] += the stage's decoded weights of tile m times token tile t. Staged tokens: unit (4c +
// i, token j, quad q) at xs[((4c + i) * NT * 8 + j) * 4 + q].
template <int MT, int CH, int NT>
__device__ __forceinline__ void nvfp4_mma_stage(float (&acc)[MT][NT][4],
                                                const uint4 (&r)[MT][2][CH],
                                                const uint32_t (&sc)[MT][2][CH], const uint4* xs) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int c = 0; c < CH; c++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint4 bt[NT];
#pragma unroll
      for (int t = 0; t < NT; t++) bt[t] = xs[((4 * c + i) * NT * 8 + t * 8 + g) * 4 + q];
#pragma unroll
      for (int m = 0; m < MT; m++) {
        const __half2 s0 = nvfp4_scale_half(sc[m][0][c], i >> 1);
        const __half2 s1 = nvfp4_scale_half(sc[m][1][c], i >> 1);
        const uint32_t w0 = uint4_word(r[m][0][c], i), w1 = uint4_word(r[m][1][c], i);
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const uint32_t a0 = nvfp4_pair_bf16x2(w0, 2 * h, s0);
          const uint32_t a1 = nvfp4_pair_bf16x2(w1, 2 * h, s1);
          const uint32_t a2 = nvfp4_pair_bf16x2(w0, 2 * h + 1, s0);
          const uint32_t a3 = nvfp4_pair_bf16x2(w1, 2 * h + 1, s1);
#pragma unroll
          for (int t = 0; t < NT; t++) {
            mma_bf16_16816(acc[m][t], a0, a1, a2, a3, uint4_word(bt[t], 2 * h),
                           uint4_word(bt[t], 2 * h + 1));
          }
        }
      }
    }
  }
}

// One pass: acc[m][t] = rows of tile m dot the pass's NT * 8 token slots over all of K, in units of
// e2m1 * e4m3 * 2^-7 (the caller applies the global scale). Ends with a barrier, so the buffers are
// free for the next pass.
template <int MT, int CH, int NT, class Stager>
__device__ __forceinline__ void nvfp4_mma_rows(float (&acc)[MT][NT][4],
                                               const uint8_t* const (&w)[MT][2],
                                               const uint8_t* const (&srow)[MT][2],
                                               const bool (&rowOk)[2], int K, const Stager& stage,
                                               uint4* buf0, uint4* buf1) {
#pragma unroll
  for (int m = 0; m < MT; m++) {
#pragma unroll
    for (int t = 0; t < NT; t++) acc[m][t][0] = acc[m][t][1] = acc[m][t][2] = acc[m][t][3] = 0.f;
  }
  const bool aligned32 = (K & 31) == 0;
  const int stages = (K + CH * kNvfp4MmaChunkK - 1) / (CH * kNvfp4MmaChunkK);
  uint4 ra[MT][2][CH], rb[MT][2][CH];
  uint32_t sa[MT][2][CH], sb[MT][2][CH];
  nvfp4_mma_load_stage<MT, CH>(ra, sa, w, srow, rowOk, 0, K, aligned32);
  stage(0, buf0);
  __syncthreads();
  // Unrolled by two so that the two register sets keep fixed names (moe_mma_rows).
  for (int s = 0; s < stages; s += 2) {
    if (s + 1 < stages) {
      nvfp4_mma_load_stage<MT, CH>(rb, sb, w, srow, rowOk, s + 1, K, aligned32);
      stage(s + 1, buf1);
    }
    nvfp4_mma_stage<MT, CH, NT>(acc, ra, sa, buf0);
    __syncthreads();  // buf1 complete; buf0 free
    if (s + 1 >= stages) break;
    if (s + 2 < stages) {
      nvfp4_mma_load_stage<MT, CH>(ra, sa, w, srow, rowOk, s + 2, K, aligned32);
      stage(s + 2, buf0);
    }
    nvfp4_mma_stage<MT, CH, NT>(acc, rb, sb, buf1);
    __syncthreads();  // buf0 complete; buf1 free
  }
}

// Accumulator element i of a tile: row g + 8 (i / 2), token column 2q + (i % 2). global128: the
// gate's and the up projection's weight_scale_2 times 2^7.
template <int NT, int CH>
__device__ __forceinline__ void nvfp4_gate_up_mma_pass(
    uint16_t* hs, const uint8_t* const (&w)[2][2], const uint8_t* const (&srow)[2][2],
    const bool (&rowOk)[2], const float (&global128)[2], const float* x, const int* sortedPairs,
    int first, int nt, int i0, int hidden, int inter, int topK, uint4* buf0, uint4* buf1) {
  const MoeMmaStageX<NT * 8, 4 * CH, 32> stage(x, sortedPairs + first, nt, topK, hidden);
  float acc[2][NT][4];
  nvfp4_mma_rows<2, CH, NT>(acc, w, srow, rowOk, hidden, stage, buf0, buf1);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int row = i0 + g + (i >> 1) * 8, tok = t * 8 + 2 * q + (i & 1);
      if (row < inter && tok < nt) {
        const float gs = acc[0][t][i] * global128[0], us = acc[1][t][i] * global128[1];
        hs[static_cast<size_t>(first + tok) * inter + row] =
            f32_to_bf16_bits((gs / (1.f + expf(-gs))) * us);
      }
    }
  }
}

// Gate/up of one block (blockIdx.x: 64 intermediate rows, blockIdx.y: active expert) in passes of
// up to PT * 8 of the expert's tokens, the last (or only) one on the fewest token tiles that hold it.
template <int PT>
__device__ __forceinline__ void nvfp4_gate_up_mma_block(
    uint16_t* hs, const uint8_t* w13, const uint8_t* s13, const float* g13, const float* x,
    const int* offsets, const int* sortedPairs, const int* activeExperts, const int* activeCount,
    int hidden, int inter, int topK, uint4* buf0, uint4* buf1) {
  static_assert(PT == kNvfp4MmaNarrowTokenTiles || PT == kMoeMmaTokenTiles, "passes of 8 or 32");
  constexpr int CH = nvfp4_mma_gate_up_chunks<PT>();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int i0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {i0 + g < inter, i0 + g + 8 < inter};
  const size_t gate0 = static_cast<size_t>(e) * 2 * inter;  // the expert's first gate row
  const size_t rowBytes = hidden / 2, scaleBytes = hidden / kNvfp4Group;
  const uint8_t* w[2][2];
  const uint8_t* srow[2][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(i0 + g + 8 * h, inter - 1);  // never read when past the end
    w[0][h] = w13 + (gate0 + row) * rowBytes;
    w[1][h] = w13 + (gate0 + inter + row) * rowBytes;
    srow[0][h] = s13 + (gate0 + row) * scaleBytes;
    srow[1][h] = s13 + (gate0 + inter + row) * scaleBytes;
  }
  const float global128[2] = {__ldg(g13 + 2 * e) * 128.f, __ldg(g13 + 2 * e + 1) * 128.f};
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (PT == 1 || nt <= 8) {
      nvfp4_gate_up_mma_pass<1, CH>(hs, w, srow, rowOk, global128, x, sortedPairs, first, nt, i0,
                                hidden, inter, topK, buf0, buf1);
    } else if (nt <= 16) {
      nvfp4_gate_up_mma_pass<2, CH>(hs, w, srow, rowOk, global128, x, sortedPairs, first, nt, i0,
                                hidden, inter, topK, buf0, buf1);
    } else {
      nvfp4_gate_up_mma_pass<PT, CH>(hs, w, srow, rowOk, global128, x, sortedPairs, first, nt, i0,
                                 hidden, inter, topK, buf0, buf1);
    }
  }
}

// hs[q, i] = bf16(silu(gate_e[i] . x[t]) * (up_e[i] . x[t])) for sorted pair q of expert e, t =
// sortedPairs[q] / topK, with NVFP4 gate|up weights. Passes of up to 32 tokens.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads, 2)
    rm_moe_gate_up_mma_nvfp4(uint16_t* hs, const uint8_t* w13, const uint8_t* s13,
                             const float* g13, const float* x, const int* offsets,
                             const int* sortedPairs, const int* activeExperts,
                             const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][4 * nvfp4_mma_gate_up_chunks<kMoeMmaTokenTiles>() * kMoeMmaPassTokens * 4];
  nvfp4_gate_up_mma_block<kMoeMmaTokenTiles>(hs, w13, s13, g13, x, offsets, sortedPairs,
                                             activeExperts, activeCount, hidden, inter, topK,
                                             xs[0], xs[1]);
}

// rm_moe_gate_up_mma_nvfp4 in passes of up to 8 tokens (decode batches of a few tokens per
// expert): bit-identical results per pair, more blocks per SM.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads, 3)
    rm_moe_gate_up_mma8_nvfp4(uint16_t* hs, const uint8_t* w13, const uint8_t* s13,
                              const float* g13, const float* x, const int* offsets,
                              const int* sortedPairs, const int* activeExperts,
                              const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4
      xs[2][4 * nvfp4_mma_gate_up_chunks<kNvfp4MmaNarrowTokenTiles>() * 8 * kNvfp4MmaNarrowTokenTiles *
            4];
  nvfp4_gate_up_mma_block<kNvfp4MmaNarrowTokenTiles>(hs, w13, s13, g13, x, offsets, sortedPairs,
                                                     activeExperts, activeCount, hidden, inter,
                                                     topK, xs[0], xs[1]);
}

template <int NT, int CH>
__device__ __forceinline__ void nvfp4_down_mma_pass(
    float* y, const uint8_t* const (&w)[1][2], const uint8_t* const (&srow)[1][2],
    const bool (&rowOk)[2], float global128, const uint16_t* hs, const float* routeWeights,
    const int* sortedPairs, int first, int nt, int d0, int hidden, int inter, uint4* buf0,
    uint4* buf1) {
  const MoeMmaStageH<NT * 8, 4 * CH, 32> stage(hs, first, nt, inter);
  float acc[1][NT][4];
  nvfp4_mma_rows<1, CH, NT>(acc, w, srow, rowOk, inter, stage, buf0, buf1);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int tok = t * 8 + 2 * q + j;
      if (tok < nt) {
        const int p = sortedPairs[first + tok];
        const float rw = routeWeights[p];
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int d = d0 + g + 8 * h;
          if (d < hidden) {
            y[static_cast<size_t>(p) * hidden + d] = rw * (acc[0][t][2 * h + j] * global128);
          }
        }
      }
    }
  }
}

// Down of one block (blockIdx.x: 64 output rows, blockIdx.y: active expert) in passes of up to
// PT * 8 of the expert's tokens, split as in nvfp4_gate_up_mma_block.
template <int PT>
__device__ __forceinline__ void nvfp4_down_mma_block(
    float* y, const uint8_t* w2, const uint8_t* s2, const float* g2, const uint16_t* hs,
    const float* routeWeights, const int* offsets, const int* sortedPairs,
    const int* activeExperts, const int* activeCount, int hidden, int inter, uint4* buf0,
    uint4* buf1) {
  static_assert(PT == kNvfp4MmaNarrowTokenTiles || PT == kMoeMmaTokenTiles, "passes of 8 or 32");
  constexpr int CH = nvfp4_mma_down_chunks<PT>();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int d0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {d0 + g < hidden, d0 + g + 8 < hidden};
  const size_t row0 = static_cast<size_t>(e) * hidden;  // the expert's first down row
  const uint8_t* w[1][2];
  const uint8_t* srow[1][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(d0 + g + 8 * h, hidden - 1);  // never read when past the end
    w[0][h] = w2 + (row0 + row) * (inter / 2);
    srow[0][h] = s2 + (row0 + row) * (inter / kNvfp4Group);
  }
  const float global128 = __ldg(g2 + e) * 128.f;
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (PT == 1 || nt <= 8) {
      nvfp4_down_mma_pass<1, CH>(y, w, srow, rowOk, global128, hs, routeWeights, sortedPairs,
                                 first, nt, d0, hidden, inter, buf0, buf1);
    } else if (nt <= 16) {
      nvfp4_down_mma_pass<2, CH>(y, w, srow, rowOk, global128, hs, routeWeights, sortedPairs,
                                 first, nt, d0, hidden, inter, buf0, buf1);
    } else {
      nvfp4_down_mma_pass<PT, CH>(y, w, srow, rowOk, global128, hs, routeWeights, sortedPairs,
                                  first, nt, d0, hidden, inter, buf0, buf1);
    }
  }
}

// y[p, d] = routeWeights[p] * (down_e[d] . hs[q]) for sorted pair q = p's position, y in pair order
// [pairs, hidden] f32, with NVFP4 down weights. Passes of up to 32 tokens.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_down_mma_nvfp4(float* y, const uint8_t* w2, const uint8_t* s2, const float* g2,
                          const uint16_t* hs, const float* routeWeights, const int* offsets,
                          const int* sortedPairs, const int* activeExperts,
                          const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][4 * nvfp4_mma_down_chunks<kMoeMmaTokenTiles>() * kMoeMmaPassTokens * 4];
  nvfp4_down_mma_block<kMoeMmaTokenTiles>(y, w2, s2, g2, hs, routeWeights, offsets, sortedPairs,
                                          activeExperts, activeCount, hidden, inter, xs[0],
                                          xs[1]);
}

// rm_moe_down_mma_nvfp4 in passes of up to 8 tokens, bit-identical results per pair.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads, 3)
    rm_moe_down_mma8_nvfp4(float* y, const uint8_t* w2, const uint8_t* s2, const float* g2,
                           const uint16_t* hs, const float* routeWeights, const int* offsets,
                           const int* sortedPairs, const int* activeExperts,
                           const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  __shared__ uint4
      xs[2][4 * nvfp4_mma_down_chunks<kNvfp4MmaNarrowTokenTiles>() * 8 *
            kNvfp4MmaNarrowTokenTiles * 4];
  nvfp4_down_mma_block<kNvfp4MmaNarrowTokenTiles>(y, w2, s2, g2, hs, routeWeights, offsets,
                                                  sortedPairs, activeExperts, activeCount, hidden,
                                                  inter, xs[0], xs[1]);
}
