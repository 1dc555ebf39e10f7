// Tensor-core routed experts over DeepSeek FP8 block-scaled weights: moe_mma.cu's kernels with the
// weights read as e4m3 codes (one byte each, half the bf16 bytes) and decoded in registers.
//   rm_moe_gate_up_mma_fp8  hs[q] = bf16(silu(W_gate[e] x[t]) * (W_up[e] x[t])), as rm_moe_gate_up_mma;
//   rm_moe_down_mma_fp8     y[p] = weight[p] * W_down[e] hs[q], as rm_moe_down_mma;
//   rm_moe_gate_up_mma8_fp8, rm_moe_down_mma8_fp8: the same in passes of up to 8 tokens.
// w13 e4m3 [E, 2 * inter, hidden] with scales in parts of `inter` rows, w2 e4m3 [E, hidden, inter]
// with scales in parts of `hidden` rows (fp8_weights.cu's layout).
//
// Mapping: as moe_mma.cu (grid (ceil(rows / 64), active experts), 4 warps of 16 output rows, the
// pass's tokens as the N side of mma.sync m16n8k16 bf16 -> f32). Fragments: K runs in chunks of 64;
// lane (g = lane / 4, q = lane % 4) loads 16 bytes = 16 codes at k = 64c + 16q of rows g and g + 8,
// and word i (4 codes, k0 = 64c + 16q + 4i) of each is the A fragment of the chunk's mma i: the
// codes k0, k0 + 1 decoded to a bf16 pair are mma k 2q, 2q + 1, the codes k0 + 2, k0 + 3 are mma k
// 2q + 8, 2q + 9 (the order of k inside one mma is free as long as A and B agree). So one 16-byte
// load of a row feeds four mmas, and a warp's load instruction reads 64 contiguous bytes of each of
// 8 rows, as the bf16 kernels' loads do. Decoding is exact (every e4m3 value is a bf16 value: cvt
// e4m3x2 -> f16x2 -> f32 -> bf16x2). The B fragment of lane (g, q) is token g's same 16 k: staged by
// MoeMmaStageX / MoeMmaStageH with LANE_K = 16 (unit (2c + h, token, q) = the 8 bf16 at 64c + 16q +
// 8h), one 16-byte shared load per two mmas.
//
// Block scales: a warp's 16 rows start at a multiple of 16, so they lie in one 128-row scale block
// of their part, and each 128-k block (2 chunks) has one scale for the whole tile. The products of
// one 128-k block go into zeroed partial accumulators, which are then added to the result times the
// block's scale: exact decoded weights, f32 accumulation, one multiply per block per accumulator
// instead of one per weight.
//
// Pipeline: stages of 8 loads of 16 bytes per lane, as the bf16 kernels (gate/up: 2 chunks = one
// scale block for 2 row tiles; down: 4 chunks = two blocks for 1 tile), but each load holds 16
// weights instead of 8; two register sets alternate, activations staged per stage into two shared
// buffers. Where K % 16 != 0 (rows not 16-byte aligned) each 16-byte load is two 8-byte ones.
//
// Pass sizes: the 32-token kernels keep 4 token tiles of accumulators and partial accumulators
// (238-248 registers on sm_90: 2 blocks per SM); the 8-token *mma8 kernels keep one tile, which
// fits 128 registers (4 blocks per SM, no spills), i.e. twice the bytes in flight per SM, for decode
// batches whose experts get a few tokens each (MoeKernels picks by pairs per expert).
//
// Determinism: a pair's result is the same mma sequence (per 128-k block: zeroed partials, the
// block's mmas in k order, then one fma by the scale) whichever kernel, pass or column carries it,
// so it does not depend on the other tokens of the batch nor on the pass size.
#pragma once
#include "fp8_weights.cu"
#include "moe_mma.cu"

// 64-k chunks per 128-column scale block.
constexpr int kFp8MmaChunksPerBlock = kFp8Block / 64;
constexpr int kFp8MmaGateUpChunks = 2;
constexpr int kFp8MmaDownChunks = 4;
// Token tiles of 8 per pass of the *mma8 kernels.
constexpr int kFp8MmaNarrowTokenTiles = 1;

// 8-byte load of 8 codes, predicated (zeros when !ok, no access), with moe_mma_load_weights' hints.
__device__ __forceinline__ uint2 fp8_mma_load8(const uint8_t* p, bool ok) {
  uint2 v;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %3, 0;\n"
      "  mov.b32 %0, 0;\n"
      "  mov.b32 %1, 0;\n"
      "  @p ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];\n"
      "}\n"
      : "=r"(v.x), "=r"(v.y)
      : "l"(p), "r"(static_cast<int>(ok)));
  return v;
}

// 16 codes at p (k .. k + 15 of a row of K codes), zeros past K or when !rowOk. aligned16: rows
// are 16-byte aligned (K % 16 == 0), so one 16-byte load, which then lies wholly inside the row;
// else two 8-byte loads (K % 8 == 0), each inside the row or skipped.
__device__ __forceinline__ uint4 fp8_mma_load16(const uint8_t* p, int k, int K, bool rowOk,
                                                bool aligned16) {
  if (aligned16) {
    return moe_mma_load_weights(reinterpret_cast<const uint16_t*>(p + k), rowOk && k < K);
  }
  const uint2 lo = fp8_mma_load8(p + k, rowOk && k < K);
  const uint2 hi = fp8_mma_load8(p + k + 8, rowOk && k + 8 < K);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}

// Two e4m3 codes (the low byte first) as a bf16 pair (the first in the low half), exactly.
// One cvt to f16x2, two to f32, one packing cvt.rn.bf16x2.f32 (every step exact): about half the
// instructions of rounding each half apart, which matters where many tokens share each decode.
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
      static_cast<__nv_fp8x2_storage_t>(codes & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(__half2(h));
  const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<const uint32_t*>(&b);
}

// Word i of a 16-code load of rows g (r0) and g + 8 (r1) as one mma's A fragment.
__device__ __forceinline__ void fp8_mma_fragment(uint32_t (&a)[4], uint32_t r0, uint32_t r1) {
  a[0] = e4m3x2_to_bf16x2(r0);
  a[1] = e4m3x2_to_bf16x2(r1);
  a[2] = e4m3x2_to_bf16x2(r0 >> 16);
  a[3] = e4m3x2_to_bf16x2(r1 >> 16);
}

__device__ __forceinline__ uint32_t uint4_word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Codes of stage s for MT row tiles (r[m][h][c]: 16 codes at k = 64 (s*CH + c) + 16q of row g + 8h
// of tile m, zeros past K or past the last row) and the tiles' scales of the stage's CH / 2 blocks
// (0 for a block past K, which has no scale).
template <int MT, int CH>
__device__ __forceinline__ void fp8_mma_load_stage(uint4 (&r)[MT][2][CH],
                                                   float (&sc)[MT][CH / kFp8MmaChunksPerBlock],
                                                   const uint8_t* const (&w)[MT][2],
                                                   const float* const (&srow)[MT],
                                                   const bool (&rowOk)[2], int s, int K,
                                                   bool aligned16) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int c = 0; c < CH; c++) {
    const int k = (s * CH + c) * 64 + q * 16;
#pragma unroll
    for (int h = 0; h < 2; h++) {
#pragma unroll
      for (int m = 0; m < MT; m++) r[m][h][c] = fp8_mma_load16(w[m][h], k, K, rowOk[h], aligned16);
    }
  }
#pragma unroll
  for (int b = 0; b < CH / kFp8MmaChunksPerBlock; b++) {
    const int k0 = (s * CH + b * kFp8MmaChunksPerBlock) * 64;
#pragma unroll
    for (int m = 0; m < MT; m++) sc[m][b] = k0 < K ? __ldg(srow[m] + k0 / kFp8Block) : 0.f;
  }
}

// acc[m][t] += scale * (stage's decoded weights of tile m times token tile t), block by block.
// Staged tokens: unit (2c + h, token j, quad q) at xs[((2c + h) * NT * 8 + j) * 4 + q], so a warp
// reads 512 contiguous bytes per load.
template <int MT, int CH, int NT>
__device__ __forceinline__ void fp8_mma_stage(float (&acc)[MT][NT][4], const uint4 (&r)[MT][2][CH],
                                              const float (&sc)[MT][CH / kFp8MmaChunksPerBlock],
                                              const uint4* xs) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int b = 0; b < CH / kFp8MmaChunksPerBlock; b++) {
    float part[MT][NT][4];
#pragma unroll
    for (int m = 0; m < MT; m++) {
#pragma unroll
      for (int t = 0; t < NT; t++) part[m][t][0] = part[m][t][1] = part[m][t][2] = part[m][t][3] = 0.f;
    }
#pragma unroll
    for (int cb = 0; cb < kFp8MmaChunksPerBlock; cb++) {
      const int c = b * kFp8MmaChunksPerBlock + cb;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        uint4 bt[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) bt[t] = xs[((2 * c + h) * NT * 8 + t * 8 + g) * 4 + q];
#pragma unroll
        for (int j = 0; j < 2; j++) {
          const int i = 2 * h + j;  // the mma of the chunk: word i of the 16-code loads
#pragma unroll
          for (int m = 0; m < MT; m++) {
            uint32_t a[4];
            fp8_mma_fragment(a, uint4_word(r[m][0][c], i), uint4_word(r[m][1][c], i));
#pragma unroll
            for (int t = 0; t < NT; t++) {
              mma_bf16_16816(part[m][t], a[0], a[1], a[2], a[3], uint4_word(bt[t], 2 * j),
                             uint4_word(bt[t], 2 * j + 1));
            }
          }
        }
      }
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
#pragma unroll
      for (int t = 0; t < NT; t++) {
#pragma unroll
        for (int i = 0; i < 4; i++) acc[m][t][i] = fmaf(sc[m][b], part[m][t][i], acc[m][t][i]);
      }
    }
  }
}

// One pass (moe_mma_rows with FP8 weights): acc[m][t] = rows of tile m dot the pass's NT * 8 token
// slots over all of K. Ends with a barrier, so the buffers are free for the next pass. rowStride is
// the distance between the rows' codes: 16-byte loads only where it is a multiple of 16 (a slice of
// K over longer rows is read with the rows' alignment, not the slice's).
template <int MT, int CH, int NT, class Stager>
__device__ __forceinline__ void fp8_mma_rows(float (&acc)[MT][NT][4],
                                             const uint8_t* const (&w)[MT][2],
                                             const float* const (&srow)[MT],
                                             const bool (&rowOk)[2], int K, const Stager& stage,
                                             uint4* buf0, uint4* buf1, int rowStride) {
  static_assert(CH % kFp8MmaChunksPerBlock == 0, "stages of whole scale blocks");
#pragma unroll
  for (int m = 0; m < MT; m++) {
#pragma unroll
    for (int t = 0; t < NT; t++) acc[m][t][0] = acc[m][t][1] = acc[m][t][2] = acc[m][t][3] = 0.f;
  }
  const bool aligned16 = (rowStride & 15) == 0;
  const int stages = (K + CH * 64 - 1) / (CH * 64);
  uint4 ra[MT][2][CH], rb[MT][2][CH];
  float sa[MT][CH / kFp8MmaChunksPerBlock], sb[MT][CH / kFp8MmaChunksPerBlock];
  fp8_mma_load_stage<MT, CH>(ra, sa, w, srow, rowOk, 0, K, aligned16);
  stage(0, buf0);
  __syncthreads();
  // Unrolled by two so that the two register sets keep fixed names (moe_mma_rows).
  for (int s = 0; s < stages; s += 2) {
    if (s + 1 < stages) {
      fp8_mma_load_stage<MT, CH>(rb, sb, w, srow, rowOk, s + 1, K, aligned16);
      stage(s + 1, buf1);
    }
    fp8_mma_stage<MT, CH, NT>(acc, ra, sa, buf0);
    __syncthreads();  // buf1 complete; buf0 free
    if (s + 1 >= stages) break;
    if (s + 2 < stages) {
      fp8_mma_load_stage<MT, CH>(ra, sa, w, srow, rowOk, s + 2, K, aligned16);
      stage(s + 2, buf0);
    }
    fp8_mma_stage<MT, CH, NT>(acc, rb, sb, buf1);
    __syncthreads();  // buf0 complete; buf1 free
  }
}

// Accumulator element i of a tile: row g + 8 (i / 2), token column 2q + (i % 2).
template <int NT>
__device__ __forceinline__ void fp8_gate_up_mma_pass(uint16_t* hs, const uint8_t* const (&w)[2][2],
                                                     const float* const (&srow)[2],
                                                     const bool (&rowOk)[2], const float* x,
                                                     const int* sortedPairs, int first, int nt,
                                                     int i0, int hidden, int inter, int topK,
                                                     uint4* buf0, uint4* buf1) {
  // The stager's CH counts 32-k columns: two per 64-k chunk.
  const MoeMmaStageX<NT * 8, 2 * kFp8MmaGateUpChunks, 16> stage(x, sortedPairs + first, nt, topK,
                                                                   hidden);
  float acc[2][NT][4];
  fp8_mma_rows<2, kFp8MmaGateUpChunks, NT>(acc, w, srow, rowOk, hidden, stage, buf0, buf1,
                                            hidden);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int row = i0 + g + (i >> 1) * 8, tok = t * 8 + 2 * q + (i & 1);
      if (row < inter && tok < nt) {
        const float gs = acc[0][t][i], us = acc[1][t][i];
        hs[static_cast<size_t>(first + tok) * inter + row] =
            f32_to_bf16_bits((gs / (1.f + expf(-gs))) * us);
      }
    }
  }
}

// Gate/up of one block (blockIdx.x: 64 intermediate rows, blockIdx.y: active expert) in passes of
// up to PT * 8 of the expert's tokens, the last (or only) one on the fewest token tiles that hold
// it (1, 2, then 4).
template <int PT>
__device__ __forceinline__ void fp8_gate_up_mma_block(uint16_t* hs, const uint8_t* w13,
                                                      const float* s13, const float* x,
                                                      const int* offsets, const int* sortedPairs,
                                                      const int* activeExperts,
                                                      const int* activeCount, int hidden,
                                                      int inter, int topK, uint4* buf0,
                                                      uint4* buf1) {
  static_assert(PT == kFp8MmaNarrowTokenTiles || PT == kMoeMmaTokenTiles, "passes of 8 or 32");
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int i0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {i0 + g < inter, i0 + g + 8 < inter};
  const size_t gate0 = static_cast<size_t>(e) * 2 * inter;  // the expert's first gate row
  const uint8_t* w[2][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(i0 + g + 8 * h, inter - 1);  // never read when past the end
    w[0][h] = w13 + (gate0 + row) * hidden;
    w[1][h] = w13 + (gate0 + inter + row) * hidden;
  }
  const int tileRow = min(i0, inter - 1);  // the tile's scale row (all 16 rows share it)
  const float* const srow[2] = {fp8_scale_row(s13, gate0 + tileRow, inter, hidden),
                                fp8_scale_row(s13, gate0 + inter + tileRow, inter, hidden)};
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (PT == 1 || nt <= 8) {
      fp8_gate_up_mma_pass<1>(hs, w, srow, rowOk, x, sortedPairs, first, nt, i0, hidden, inter,
                              topK, buf0, buf1);
    } else if (nt <= 16) {
      fp8_gate_up_mma_pass<2>(hs, w, srow, rowOk, x, sortedPairs, first, nt, i0, hidden, inter,
                              topK, buf0, buf1);
    } else {
      fp8_gate_up_mma_pass<PT>(hs, w, srow, rowOk, x, sortedPairs, first, nt, i0, hidden, inter,
                               topK, buf0, buf1);
    }
  }
}

// hs[q, i] = bf16(silu(gate_e[i] . x[t]) * (up_e[i] . x[t])) for sorted pair q of expert e, t =
// sortedPairs[q] / topK, with FP8 gate|up weights. Needs hidden % 8 == 0. Passes of up to 32 tokens.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_gate_up_mma_fp8(uint16_t* hs, const uint8_t* w13, const float* s13, const float* x,
                           const int* offsets, const int* sortedPairs, const int* activeExperts,
                           const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][2 * kFp8MmaGateUpChunks * kMoeMmaPassTokens * 4];
  fp8_gate_up_mma_block<kMoeMmaTokenTiles>(hs, w13, s13, x, offsets, sortedPairs, activeExperts,
                                           activeCount, hidden, inter, topK, xs[0], xs[1]);
}

// rm_moe_gate_up_mma_fp8 in passes of up to 8 tokens (decode batches of a few tokens per expert):
// bit-identical results per pair, more blocks per SM.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads, 4)
    rm_moe_gate_up_mma8_fp8(uint16_t* hs, const uint8_t* w13, const float* s13, const float* x,
                            const int* offsets, const int* sortedPairs, const int* activeExperts,
                            const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][2 * kFp8MmaGateUpChunks * 8 * kFp8MmaNarrowTokenTiles * 4];
  fp8_gate_up_mma_block<kFp8MmaNarrowTokenTiles>(hs, w13, s13, x, offsets, sortedPairs,
                                                 activeExperts, activeCount, hidden, inter, topK,
                                                 xs[0], xs[1]);
}

template <int NT>
__device__ __forceinline__ void fp8_down_mma_pass(float* y, const uint8_t* const (&w)[1][2],
                                                  const float* const (&srow)[1],
                                                  const bool (&rowOk)[2], const uint16_t* hs,
                                                  const float* routeWeights, const int* sortedPairs,
                                                  int first, int nt, int d0, int hidden, int inter,
                                                  uint4* buf0, uint4* buf1) {
  const MoeMmaStageH<NT * 8, 2 * kFp8MmaDownChunks, 16> stage(hs, first, nt, inter);
  float acc[1][NT][4];
  fp8_mma_rows<1, kFp8MmaDownChunks, NT>(acc, w, srow, rowOk, inter, stage, buf0, buf1, inter);
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
          if (d < hidden) y[static_cast<size_t>(p) * hidden + d] = rw * acc[0][t][2 * h + j];
        }
      }
    }
  }
}

// Down of one block (blockIdx.x: 64 output rows, blockIdx.y: active expert) in passes of up to
// PT * 8 of the expert's tokens, split as in fp8_gate_up_mma_block.
template <int PT>
__device__ __forceinline__ void fp8_down_mma_block(float* y, const uint8_t* w2, const float* s2,
                                                   const uint16_t* hs, const float* routeWeights,
                                                   const int* offsets, const int* sortedPairs,
                                                   const int* activeExperts,
                                                   const int* activeCount, int hidden, int inter,
                                                   uint4* buf0, uint4* buf1) {
  static_assert(PT == kFp8MmaNarrowTokenTiles || PT == kMoeMmaTokenTiles, "passes of 8 or 32");
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int d0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {d0 + g < hidden, d0 + g + 8 < hidden};
  const size_t row0 = static_cast<size_t>(e) * hidden;  // the expert's first down row
  const uint8_t* w[1][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(d0 + g + 8 * h, hidden - 1);  // never read when past the end
    w[0][h] = w2 + (row0 + row) * inter;
  }
  const float* const srow[1] = {fp8_scale_row(s2, row0 + min(d0, hidden - 1), hidden, inter)};
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (PT == 1 || nt <= 8) {
      fp8_down_mma_pass<1>(y, w, srow, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden,
                           inter, buf0, buf1);
    } else if (nt <= 16) {
      fp8_down_mma_pass<2>(y, w, srow, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden,
                           inter, buf0, buf1);
    } else {
      fp8_down_mma_pass<PT>(y, w, srow, rowOk, hs, routeWeights, sortedPairs, first, nt, d0,
                            hidden, inter, buf0, buf1);
    }
  }
}

// y[p, d] = routeWeights[p] * (down_e[d] . hs[q]) for sorted pair q = p's position, y in pair order
// [pairs, hidden] f32, with FP8 down weights. Needs inter % 8 == 0. Passes of up to 32 tokens.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_down_mma_fp8(float* y, const uint8_t* w2, const float* s2, const uint16_t* hs,
                        const float* routeWeights, const int* offsets, const int* sortedPairs,
                        const int* activeExperts, const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][2 * kFp8MmaDownChunks * kMoeMmaPassTokens * 4];
  fp8_down_mma_block<kMoeMmaTokenTiles>(y, w2, s2, hs, routeWeights, offsets, sortedPairs,
                                        activeExperts, activeCount, hidden, inter, xs[0], xs[1]);
}

// rm_moe_down_mma_fp8 in passes of up to 8 tokens, bit-identical results per pair.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads, 4)
    rm_moe_down_mma8_fp8(float* y, const uint8_t* w2, const float* s2, const uint16_t* hs,
                         const float* routeWeights, const int* offsets, const int* sortedPairs,
                         const int* activeExperts, const int* activeCount, int hidden,
                         int inter) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][2 * kFp8MmaDownChunks * 8 * kFp8MmaNarrowTokenTiles * 4];
  fp8_down_mma_block<kFp8MmaNarrowTokenTiles>(y, w2, s2, hs, routeWeights, offsets, sortedPairs,
                                              activeExperts, activeCount, hidden, inter, xs[0],
                                              xs[1]);
}
