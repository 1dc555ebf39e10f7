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

// The cache slot of position p of a sequence (its block-table row).
__device__ __forceinline__ size_t idx_slot(const int* table, int p, int blockSize) {
  return static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize;
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

// Shared-memory layout of rm_indexer_scores_fp8_mma in bytes (parts 128-byte aligned): the query
// codes as bf16 [N][dim + 8] (N = heads rounded up to 16, zero rows past heads), two raw e4m3 key
// tiles [64][dim] (the next one arrives by cp.async while this one is used), the tile's keys as
// bf16 [64][dim + 8], the f32 dot tile [64][N + 4] and the head weights [N].
struct IdxFp8MmaSmem {
  int ldk, ldc, n, q, raw, rawStride, keys, dots, weights, total;
  __host__ __device__ IdxFp8MmaSmem(int heads, int dim) {
    auto up = [](int b) { return (b + 127) & ~127; };
    n = (heads + 15) & ~15;
    ldk = dim + 8;
    ldc = n + 4;
    q = 0;
    raw = q + up(n * ldk * 2);
    rawStride = up(kIdxMmaTile * dim);
    keys = raw + 2 * rawStride;
    dots = keys + up(kIdxMmaTile * ldk * 2);
    weights = dots + up(kIdxMmaTile * ldc * 4);
    total = weights + n * 4;
  }
};

// Starts copying the codes of positions p0 .. p0+63 (zeros from len on) into raw ([64][dim]
// bytes), as one cp.async group.
__device__ __forceinline__ void idx_issue_fp8_keys(uint8_t* raw, const uint8_t* codes,
                                                   const int* table, int p0, int len, int dim,
                                                   int blockSize) {
  const int vecPerRow = dim / 16;
  for (int i = threadIdx.x; i < kIdxMmaTile * vecPerRow; i += blockDim.x) {
    const int row = i / vecPerRow, c = i - row * vecPerRow, p = p0 + row;
    const bool ok = p < len;
    const uint8_t* src = ok ? codes + idx_slot(table, p, blockSize) * dim : codes;
    mla_cp_async16(raw + row * dim + 16 * c, src + 16 * c, ok);
  }
  mla_cp_async_commit();
}

// rm_indexer_scores_fp8 on tensor cores, the same contract (dim % 16 == 0). The code values are
// exact in bf16, so one bf16 WMMA per k step gives the products exactly, accumulated in f32.
// Mapping as rm_indexer_scores_mma: grid (position blocks, rows), 8 warps; per tile of 64 positions
// the raw codes arrive by cp.async (the next tile's copy overlaps this tile's work), are widened to
// bf16 in shared memory, warps compute the 64 x N dot tile by WMMA, and threads 0..63 reduce their
// position's heads in head order: ks[p] * sum_h ws[h] * relu(dot).
RM_KERNEL void __launch_bounds__(kIdxMmaThreads)
    rm_indexer_scores_fp8_mma(float* scores, int ldScores, const float* q, const float* qScale,
                              const float* w, const uint8_t* codes, const float* kScales,
                              const int* blockTable, int maxBlocksPerSeq, const int* tokenSeq,
                              const int* tokenPos, int rowBase, int heads, int dim, int blockSize,
                              float scale, float headScale) {
  rm_pdl_prologue();
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char idxFp8MmaSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  if (blockIdx.x * kIdxMmaTile >= len) return;
  const IdxFp8MmaSmem L(heads, dim);
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(idxFp8MmaSmem + L.q);
  auto rawTile = [&](int buf) { return idxFp8MmaSmem + L.raw + buf * L.rawStride; };
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(idxFp8MmaSmem + L.keys);
  float* dots = reinterpret_cast<float*>(idxFp8MmaSmem + L.dots);
  float* ws = reinterpret_cast<float*>(idxFp8MmaSmem + L.weights);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * kIdxMmaTile;
  idx_issue_fp8_keys(rawTile(0), codes, table, blockIdx.x * kIdxMmaTile, len, dim, blockSize);
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
  for (int i = threadIdx.x; i < L.n * dim; i += blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    qs[h * L.ldk + d] = __float2bfloat16_rn(h < heads ? qr[i] : 0.f);
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    const size_t th = static_cast<size_t>(t) * heads + h;
    ws[h] = h < heads ? w[th] * headScale * qScale[th] * scale : 0.f;
  }
  float* out = scores + static_cast<size_t>(r) * ldScores;
  const int warp = threadIdx.x >> 5;
  const int nTiles = L.n / 16, tiles = (kIdxMmaTile / 16) * nTiles;
  const int vecPerRow = dim / 8;
  int buf = 0;
  for (int p0 = blockIdx.x * kIdxMmaTile; p0 < len; p0 += step, buf ^= 1) {
    __syncthreads();  // the other raw tile, the bf16 keys and the dots are no longer read
    if (p0 + step < len) {
      idx_issue_fp8_keys(rawTile(buf ^ 1), codes, table, p0 + step, len, dim, blockSize);
      mla_cp_async_wait<1>();  // this tile's group is complete, the next one may still run
    } else {
      mla_cp_async_wait<0>();
    }
    __syncthreads();
    const uint8_t* raw = rawTile(buf);
    for (int i = threadIdx.x; i < kIdxMmaTile * vecPerRow; i += blockDim.x) {
      const int row = i / vecPerRow, c = i - row * vecPerRow;
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
    __syncthreads();
    for (int tile = warp; tile < tiles; tile += kIdxMmaThreads / 32) {
      const int m = tile % (kIdxMmaTile / 16), n = tile / (kIdxMmaTile / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.f);
      for (int k0 = 0; k0 < dim; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(a, ks + 16 * m * L.ldk + k0, L.ldk);
        wmma::load_matrix_sync(b, qs + 16 * n * L.ldk + k0, L.ldk);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(dots + 16 * m * L.ldc + 16 * n, c, L.ldc, wmma::mem_row_major);
    }
    __syncthreads();
    const int p = p0 + threadIdx.x;
    if (threadIdx.x < kIdxMmaTile && p < len) {
      const float* dr = dots + threadIdx.x * L.ldc;
      float sum = 0.f;
      for (int h = 0; h < heads; h++) sum += ws[h] * fmaxf(dr[h], 0.f);
      out[p] = sum * kScales[idx_slot(table, p, blockSize)];
    }
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
