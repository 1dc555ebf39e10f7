// DeepSeek Sparse Attention with FP8 indexer keys (--indexer-cache-dtype fp8_e4m3): the key cache
// holds e4m3 codes [numBlocks, blockSize, dim] (one byte each) and one f32 scale per position
// [numBlocks, blockSize] per indexed layer, paged by the same block table as the latent cache.
// Quantization (keys on append, query heads before scoring), as the CPU's Quantizers.fp8Vector:
// s = amax / 448 (1 for an all-zero row), codes e4m3(clamp(x / s, +-448)) rounded to nearest even,
// all in f32 (IEEE division: no fast-math), so the GPU writes the CPU's bytes for the same input.
// Scores: I[p] = ks[p] * sum_h (w[h] * headScale * qs[h] * scale) * relu(qc[h] . kc[p]) over the
// code values (exact in bf16 and f32), the dequantized dot products with the positive scales taken
// out of the relu. Needs dim <= 128 (one scale per key) and dim % 8 == 0 (16 for tensor cores).
// The selections, top-k and sparse attention are dsa_indexer.cu's.
#pragma once
#include "dsa_indexer.cu"
#include "fp8_weights.cu"

__device__ __forceinline__ uint8_t f32_to_e4m3(float x) {
  if (isnan(x)) return 0x7f;  // as the CPU's Fp8E4m3.encode
  return static_cast<uint8_t>(
      __nv_cvt_float_to_fp8(fminf(fmaxf(x, -448.f), 448.f), __NV_SATFINITE, __NV_E4M3));
}

// One row of dim values at src, by one warp (lanes over the dims): its scale s and its e4m3 codes,
// written to codes + dst * dim and scales[dst] when codes is non-null (scales[dst] always), and as
// their exact values to decoded (dim values) when decoded is non-null (decoded may be src: each
// lane rewrites only the values it read). Shared by rm_indexer_fp8_quantize and the fused indexer
// key kernel (the same bits).
__device__ __forceinline__ void idx_fp8_quantize_row(uint8_t* codes, float* scales, float* decoded,
                                                     const float* src, size_t dst, int dim) {
  const int lane = threadIdx.x & 31;
  float a = 0.f;
  for (int d = lane; d < dim; d += 32) a = fmaxf(a, fabsf(src[d]));
  const float amax = warp_max(a);
  const float s = amax == 0.f ? 1.f : amax / 448.f;
  for (int d = lane; d < dim; d += 32) {
    const uint8_t c = f32_to_e4m3(src[d] / s);
    if (codes != nullptr) codes[dst * dim + d] = c;
    if (decoded != nullptr) decoded[d] = e4m3_to_f32(c);
  }
  if (lane == 0) scales[dst] = s;
}

// For each of `rows` rows of dim values of x (row r at x + r * dim): idx_fp8_quantize_row with dst
// = slots[r] (r when slots is null) and decoded + r * dim.
// Mapping: one warp per row, 8 rows per block, lanes over the dims.
RM_KERNEL void rm_indexer_fp8_quantize(uint8_t* codes, float* scales, float* decoded,
                                       const float* x, const int* slots, int rows, int dim) {
  rm_pdl_prologue();
  const int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;
  const size_t dst = slots != nullptr ? static_cast<size_t>(slots[r]) : static_cast<size_t>(r);
  idx_fp8_quantize_row(codes, scales,
                       decoded != nullptr ? decoded + static_cast<size_t>(r) * dim : nullptr,
                       x + static_cast<size_t>(r) * dim, dst, dim);
}

// rm_indexer_scores over FP8 keys: q holds the query heads' code values ([tokens, heads, dim],
// rm_indexer_fp8_quantize's decoded output) and qScale their scales [tokens, heads]; codes and
// kScales are one layer's key cache. Writes scores[r, p] for p <= tokenPos[t] as the header says.
// Mapping as rm_indexer_scores: grid (position blocks, rows), 128 threads; the block stages the
// row's query codes and its per-head weights w * headScale * qs * scale in shared memory (heads *
// (dim + 1) floats, dynamic); each thread scores positions blockIdx.x * 128 + tid, striding by the
// grid, reading each key row as 8-byte loads of 8 codes.
RM_KERNEL void rm_indexer_scores_fp8(float* scores, int ldScores, const float* q,
                                     const float* qScale, const float* w, const uint8_t* codes,
                                     const float* kScales, const int* blockTable,
                                     int maxBlocksPerSeq, const int* tokenSeq, const int* tokenPos,
                                     int rowBase, int heads, int dim, int blockSize, float scale,
                                     float headScale) {
  rm_pdl_prologue();
  extern __shared__ float idxFp8Smem[];
  float* qs = idxFp8Smem;
  float* ws = idxFp8Smem + heads * dim;
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  if (blockIdx.x * blockDim.x >= len) return;
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
  for (int i = threadIdx.x; i < heads * dim; i += blockDim.x) qs[i] = qr[i];
  for (int h = threadIdx.x; h < heads; h += blockDim.x) {
    const size_t th = static_cast<size_t>(t) * heads + h;
    ws[h] = w[th] * headScale * qScale[th] * scale;
  }
  __syncthreads();
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  float* out = scores + static_cast<size_t>(r) * ldScores;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < len; p += gridDim.x * blockDim.x) {
    const size_t slot = idx_slot(table, p, blockSize);
    const uint8_t* kr = codes + slot * dim;
    float sum = 0.f;
    for (int h = 0; h < heads; h++) {
      const float* qh = qs + h * dim;
      float dot = 0.f;
      for (int d = 0; d < dim; d += 8) {
        const uint2 v = *reinterpret_cast<const uint2*>(kr + d);
        float kf[8];
        e4m3x4_to_f32(v.x, kf);
        e4m3x4_to_f32(v.y, kf + 4);
#pragma unroll
        for (int j = 0; j < 8; j++) dot += qh[d + j] * kf[j];
      }
      sum += ws[h] * fmaxf(dot, 0.f);
    }
    out[p] = sum * kScales[slot];
  }
}

constexpr int kIdxFp8Stages = 4;  // raw e4m3 key tiles per warp (three in flight while one is used)

// Shared-memory layout of rm_indexer_scores_fp8_mma in bytes (parts 128-byte aligned; DsaKernels'
// scoreFp8MmaSharedBytes mirrors it): the query codes as bf16 [N][dim + 8] (N = heads rounded up
// to 16, zero rows past heads), the head weights [N], then per warp kIdxFp8Stages raw stages (e4m3
// codes [32][dim] and the 32 positions' key scales) and one work tile: the step's keys widened to
// bf16 [32][dim + 8], then, once the MMAs have read them, the f32 dots [32][N + 4].
struct IdxFp8MmaSmem {
  int ldk, ldc, n, q, weights, ring, rawScales, rawStage, work, warpBytes, total;
  __host__ __device__ IdxFp8MmaSmem(int heads, int dim, int warps) {
    auto up = [](int b) { return (b + 127) & ~127; };
    n = (heads + 15) & ~15;
    ldk = dim + 8;
    ldc = n + 4;
    q = 0;
    weights = q + up(n * ldk * 2);
    ring = weights + up(n * 4);
    rawScales = up(kIdxWarpRows * dim);
    rawStage = rawScales + up(kIdxWarpRows * 4);
    const int keyBytes = kIdxWarpRows * ldk * 2, dotBytes = kIdxWarpRows * ldc * 4;
    work = kIdxFp8Stages * rawStage;
    warpBytes = work + up(keyBytes > dotBytes ? keyBytes : dotBytes);
    total = ring + warps * warpBytes;
  }
};

// 4-byte asynchronous global -> shared copy, zero-filled without a read when !ok.
__device__ __forceinline__ void idx_cp_async4(void* dst, const void* src, bool ok) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
               "r"(ok ? 4 : 0));
}

// One cp.async group per warp step: the codes and scales of positions p0 .. p0+31 into a raw
// stage (an empty group from len on, so that every step commits one).
__device__ __forceinline__ void idx_warp_issue_fp8_keys(unsigned char* stage, int scalesAt,
                                                        const uint8_t* codes, const float* kScales,
                                                        const int* table, int p0, int len,
                                                        int dim, int blockSize) {
  if (p0 < len) {
    const int slot = idx_warp_copy(stage, dim, codes, dim, table, p0, len, blockSize);
    const int lane = threadIdx.x & 31;
    const bool ok = p0 + lane < len;
    idx_cp_async4(stage + scalesAt + 4 * lane, ok ? kScales + slot : kScales, ok);
  }
  mla_cp_async_commit();
}

// rm_indexer_scores_fp8 on tensor cores, the same contract (dim % 16 == 0, heads <= 64). The code
// values are exact in bf16, so one bf16 WMMA per k step gives the products exactly, accumulated in
// f32. Mapping as rm_indexer_scores_mma: per step a warp's 32 positions arrive as raw codes and
// scales by cp.async (kIdxFp8Stages - 1 steps in flight), the warp widens the codes to bf16 in its
// work tile, computes the 32 x N dots there by WMMA (idx_warp_dots) and each lane reduces one
// position's heads in head order: ks[p] * sum_h ws[h] * relu(dot).
RM_KERNEL void __launch_bounds__(kIdxScoreMaxWarps * 32)
    rm_indexer_scores_fp8_mma(float* scores, int ldScores, const float* q, const float* qScale,
                              const float* w, const uint8_t* codes, const float* kScales,
                              const int* blockTable, int maxBlocksPerSeq, const int* tokenSeq,
                              const int* tokenPos, int rowBase, int heads, int dim, int blockSize,
                              float scale, float headScale) {
  rm_pdl_prologue();
  extern __shared__ __align__(128) unsigned char idxFp8MmaSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (blockIdx.x * warps * kIdxWarpRows >= len) return;
  const IdxFp8MmaSmem L(heads, dim, warps);
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(idxFp8MmaSmem + L.q);
  float* ws = reinterpret_cast<float*>(idxFp8MmaSmem + L.weights);
  unsigned char* ring = idxFp8MmaSmem + L.ring + warp * L.warpBytes;
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(ring + L.work);
  float* dots = reinterpret_cast<float*>(ring + L.work);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * warps * kIdxWarpRows;
  const int first = (blockIdx.x * warps + warp) * kIdxWarpRows;
  for (int i = 0; i < kIdxFp8Stages - 1; i++) {
    idx_warp_issue_fp8_keys(ring + i * L.rawStage, L.rawScales, codes, kScales, table,
                            first + i * step, len, dim, blockSize);
  }
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
#pragma unroll 4
  for (int i = 4 * threadIdx.x; i < L.n * dim; i += 4 * blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    const float4 v = h < heads ? *reinterpret_cast<const float4*>(qr + i) : float4{0, 0, 0, 0};
    qs[h * L.ldk + d] = __float2bfloat16_rn(v.x);
    qs[h * L.ldk + d + 1] = __float2bfloat16_rn(v.y);
    qs[h * L.ldk + d + 2] = __float2bfloat16_rn(v.z);
    qs[h * L.ldk + d + 3] = __float2bfloat16_rn(v.w);
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    const size_t th = static_cast<size_t>(t) * heads + h;
    ws[h] = h < heads ? w[th] * headScale * qScale[th] * scale : 0.f;
  }
  __syncthreads();  // the only block barrier: the query and weights are staged
  float* out = scores + static_cast<size_t>(r) * ldScores;
  const int vecPerRow = dim / 8;
  int i = 0;
  for (int p0 = first; p0 < len; p0 += step, i++) {
    mla_cp_async_wait<kIdxFp8Stages - 2>();  // this step's group is complete
    __syncwarp();                            // and visible to the whole warp
    // The raw stage the previous step used (read before that step's last __syncwarp).
    idx_warp_issue_fp8_keys(ring + (i + kIdxFp8Stages - 1) % kIdxFp8Stages * L.rawStage,
                            L.rawScales, codes, kScales, table, p0 + (kIdxFp8Stages - 1) * step,
                            len, dim, blockSize);
    const unsigned char* raw = ring + i % kIdxFp8Stages * L.rawStage;
    for (int j = lane; j < kIdxWarpRows * vecPerRow; j += 32) {
      const int row = j / vecPerRow, c = j - row * vecPerRow;
      const uint2 v = *reinterpret_cast<const uint2*>(raw + row * dim + 8 * c);
      float f[8];
      e4m3x4_to_f32(v.x, f);
      e4m3x4_to_f32(v.y, f + 4);
      uint4 packed;
      packed.x = f32_to_bf16_bits(f[0]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[1])) << 16);
      packed.y = f32_to_bf16_bits(f[2]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[3])) << 16);
      packed.z = f32_to_bf16_bits(f[4]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[5])) << 16);
      packed.w = f32_to_bf16_bits(f[6]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[7])) << 16);
      *reinterpret_cast<uint4*>(ks + row * L.ldk + 8 * c) = packed;
    }
    __syncwarp();  // the widened keys are visible to the whole warp
    idx_warp_dots(dots, L.ldc, ks, L.ldk, qs, nullptr, L.n / 16, dim);
    const float sum = idx_reduce_heads<false>(dots + lane * L.ldc, ws, heads, 0.f);
    const float kScale = reinterpret_cast<const float*>(raw + L.rawScales)[lane];
    if (p0 + lane < len) out[p0 + lane] = sum * kScale;
    __syncwarp();  // the raw stage and the work tile are read
  }
}

// out[p, :] = the codes of position p of one sequence widened to bf16 (exact), outScales[p] its
// scale, for p < ctxLen, so the prefill GEMMs read the context's keys as one dense bf16 matrix.
// table = that sequence's block-table row. Mapping: grid (ctxLen), threads over groups of 8 codes.
RM_KERNEL void rm_indexer_fp8_gather(uint16_t* out, float* outScales, const uint8_t* codes,
                                     const float* kScales, const int* table, int dim,
                                     int blockSize) {
  rm_pdl_prologue();
  const int p = blockIdx.x;
  const size_t slot = idx_slot(table, p, blockSize);
  const uint8_t* src = codes + slot * dim;
  uint16_t* dst = out + static_cast<size_t>(p) * dim;
  for (int i = threadIdx.x; i < dim / 8; i += blockDim.x) {
    const uint2 v = *reinterpret_cast<const uint2*>(src + 8 * i);
    float f[8];
    e4m3x4_to_f32(v.x, f);
    e4m3x4_to_f32(v.y, f + 4);
#pragma unroll
    for (int j = 0; j < 8; j++) dst[8 * i + j] = f32_to_bf16_bits(f[j]);
  }
  if (threadIdx.x == 0) outScales[p] = kScales[slot];
}

// rm_indexer_reduce over FP8 keys: S [rows * heads, ctx] holds the code dot products qc[t, h] .
// kc[p] (a GEMM over rm_indexer_fp8_gather's matrix), kScales[p] the gathered scales, qScale the
// query heads' scales; scores[r, p] = kScales[p] * sum_h (w[t, h] * headScale * qScale[t, h] *
// scale) * relu(S[r * heads + h, p]) for p <= tokenPos[t], heads in order.
// Mapping: grid (ceil(ctx / 256), rows), a thread per position: coalesced reads of S.
RM_KERNEL void rm_indexer_reduce_fp8(float* scores, int ldScores, const float* S, int ctx,
                                     const float* w, const float* qScale, const float* kScales,
                                     const int* tokenPos, int rowBase, int heads, float scale,
                                     float headScale) {
  rm_pdl_prologue();
  const int r = blockIdx.y, t = rowBase + r;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p > tokenPos[t] || p >= ctx) return;
  const float* wr = w + static_cast<size_t>(t) * heads;
  const float* qsr = qScale + static_cast<size_t>(t) * heads;
  const float* sr = S + static_cast<size_t>(r) * heads * ctx + p;
  float sum = 0.f;
  for (int h = 0; h < heads; h++) {
    sum += (wr[h] * headScale * qsr[h] * scale) * fmaxf(sr[static_cast<size_t>(h) * ctx], 0.f);
  }
  scores[static_cast<size_t>(r) * ldScores + p] = sum * kScales[p];
}
