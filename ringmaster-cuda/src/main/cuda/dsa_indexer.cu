// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's key norm, its scores
// over the paged indexer-key cache (CUDA cores, or tensor cores with the query in two bf16 parts),
// the top-k selection per query (one block per row, or a row spread over many blocks) and MLA
// attention over the selected positions only on CUDA cores (the tensor-core form is
// rm_mla_sparse_split_mma in mla_mma.cu). docs/numerics.md gives the semantics the CPU reference
// implements.
//
// Indexer-key cache: bf16 [numBlocks, blockSize, dim] per indexed layer, paged by the same block
// table as the latent cache (a position's key lives in the block its latent row does).
// Selections: int [tokens, topK]; a row of context len <= topK lists 0 .. len-1, a longer one the
// topK positions of the highest scores (ties: the earlier position); both ascending, then -1.
#pragma once
#include <mma.h>
#include "common.cuh"
#include "mla_mma.cu"

constexpr int kIdxScoreThreads = 128;
constexpr int kIdxTopkThreads = 1024;

// row[:] = LayerNorm(row[:]) * gamma + beta, in place (transformers' nn.LayerNorm, biased
// variance), by the whole block (threads over the dims; scratch: 32 floats). Shared by rm_layernorm
// and the fused indexer key kernel, which run it with the same block size (kIdxNormThreads), so
// their sums associate alike and the results are the same bits. Ends before a barrier: the caller
// synchronises before other threads read the row.
constexpr int kIdxNormThreads = 128;
__device__ __forceinline__ void idx_layernorm_row(float* row, const float* gamma, const float* beta,
                                                  int dim, float eps, float* scratch) {
  float s = 0.f;
  for (int d = threadIdx.x; d < dim; d += blockDim.x) s += row[d];
  const float mean = block_sum(s, scratch) / dim;
  float v = 0.f;
  for (int d = threadIdx.x; d < dim; d += blockDim.x) {
    const float c = row[d] - mean;
    v += c * c;
  }
  const float inv = 1.f / sqrtf(block_sum(v, scratch) / dim + eps);
  for (int d = threadIdx.x; d < dim; d += blockDim.x) row[d] = (row[d] - mean) * inv * gamma[d] + beta[d];
}

// x[t, :] = LayerNorm(x[t, :]) * gamma + beta, in place (idx_layernorm_row).
// Mapping: one block of kIdxNormThreads per row, threads over the dims.
RM_KERNEL void rm_layernorm(float* x, const float* gamma, const float* beta, int dim, float eps) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  idx_layernorm_row(x + static_cast<size_t>(blockIdx.x) * dim, gamma, beta, dim, eps, scratch);
}

// scores[r, p] = sum_h (w[t, h] * headScale) * relu((q[t, h, :] . key[p]) * scale) for the query
// token t = rowBase + r and every position p <= tokenPos[t] of its sequence (the rest of the row is
// not written). q is [tokens, heads, dim] (rotated), w [tokens, heads], keys bf16 in the cache.
// Mapping: grid (position blocks, rows), 128 threads; the block stages the row's queries and
// weights in shared memory (heads * (dim + 1) floats, dynamic) and each thread scores positions
// blockIdx.x * 128 + tid, striding by the grid, so a fixed grid (a graph's) covers any context.
// dim % 8 == 0: each key row is read as 16-byte loads, once from DRAM and then from L1 per head.
RM_KERNEL void rm_indexer_scores(float* scores, int ldScores, const float* q, const float* w,
                                 const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                                 const int* tokenSeq, const int* tokenPos, int rowBase, int heads,
                                 int dim, int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  extern __shared__ float idxSmem[];
  float* qs = idxSmem;
  float* ws = idxSmem + heads * dim;
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  if (blockIdx.x * blockDim.x >= len) return;  // a graph's grid covers longer contexts than this row's
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
  for (int i = threadIdx.x; i < heads * dim; i += blockDim.x) qs[i] = qr[i];
  for (int h = threadIdx.x; h < heads; h += blockDim.x) ws[h] = w[static_cast<size_t>(t) * heads + h] * headScale;
  __syncthreads();
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  float* out = scores + static_cast<size_t>(r) * ldScores;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < len; p += gridDim.x * blockDim.x) {
    const uint16_t* kr =
        keys + (static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize) * dim;
    float sum = 0.f;
    for (int h = 0; h < heads; h++) {
      const float* qh = qs + h * dim;
      float dot = 0.f;
      for (int d = 0; d < dim; d += 8) {
        float kf[8];
        bf16x8_to_f32(*reinterpret_cast<const uint4*>(kr + d), kf);
#pragma unroll
        for (int j = 0; j < 8; j++) dot += qh[d + j] * kf[j];
      }
      sum += ws[h] * fmaxf(dot * scale, 0.f);
    }
    out[p] = sum;
  }
}

// The cache slot of position p of a sequence (its block-table row).
__device__ __forceinline__ size_t idx_slot(const int* table, int p, int blockSize) {
  return static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize;
}

// The tensor-core score kernels (rm_indexer_scores_mma, rm_indexer_scores_fp8_mma) stream the keys:
// every warp owns its own positions (kIdxWarpRows per step) and its own ring of key stages in
// shared memory, so no block barrier stands between the copies, the MMAs and the head reduction;
// only the row's query and head weights are staged once per block. kIdxScoreMaxWarps warps per
// block and one block per SM fill the SM's shared memory with stages in flight (DsaKernels picks
// the warps that fit: fewer for 64 heads or a smaller shared memory).
constexpr int kIdxWarpRows = 32;       // positions a warp scores per step: two 16-row MMA tiles
constexpr int kIdxWarpMTiles = kIdxWarpRows / 16;
constexpr int kIdxMaxNTiles = 4;       // heads <= 64: all heads' accumulators held at once
constexpr int kIdxScoreMaxWarps = 8;
constexpr int kIdxBf16Stages = 3;      // bf16 key tiles per warp (two in flight while one is used)

// Shared-memory layout of rm_indexer_scores_mma in bytes (parts 128-byte aligned; DsaKernels'
// scoreMmaSharedBytes mirrors it): the query's high and residual bf16 parts [N][dim + 8] (N =
// heads rounded up to 16, zero rows past heads), the head weights [N], then per warp
// kIdxBf16Stages stages, each a key tile [32][dim + 8] bf16 that, once its MMAs have read it,
// holds the warp's f32 dots [32][N + 4] for the head reduction.
struct IdxMmaSmem {
  int ldk, ldc, n, qHi, qLo, weights, ring, stage, total;
  __host__ __device__ IdxMmaSmem(int heads, int dim, int warps) {
    auto up = [](int b) { return (b + 127) & ~127; };
    n = (heads + 15) & ~15;
    ldk = dim + 8;
    ldc = n + 4;
    qHi = 0;
    qLo = qHi + up(n * ldk * 2);
    weights = qLo + up(n * ldk * 2);
    ring = weights + up(n * 4);
    const int keyBytes = kIdxWarpRows * ldk * 2, dotBytes = kIdxWarpRows * ldc * 4;
    stage = up(keyBytes > dotBytes ? keyBytes : dotBytes);
    total = ring + warps * kIdxBf16Stages * stage;
  }
};

// Starts one warp's copy of the rows of positions p0 .. p0+31 (p0 < len; zeros from len on) into
// dst (row stride ld bytes; rowBytes, a multiple of 16, from src + slot * rowBytes) by cp.async,
// without committing the group; consecutive lanes copy consecutive 16 bytes. Where the 32
// positions lie in one cache block (p0 and blockSize multiples of 32, as the streaming kernels'
// steps are) their rows are consecutive: one block-table read, no shuffles. Otherwise one read per
// lane, its slot shuffled to the lanes that copy that row. Returns the slot of position p0 + lane
// (0 from len on).
__device__ __forceinline__ int idx_warp_copy(unsigned char* dst, int ld, const unsigned char* src,
                                             int rowBytes, const int* table, int p0, int len,
                                             int blockSize) {
  const int lane = threadIdx.x & 31, p = p0 + lane;
  const int vec = rowBytes / 16;
  if (blockSize % kIdxWarpRows == 0 && p0 % kIdxWarpRows == 0 && kIdxWarpRows % vec == 0) {
    const int slot0 = table[p0 / blockSize] * blockSize + p0 % blockSize;
    const unsigned char* base = src + static_cast<size_t>(slot0) * rowBytes;
    const int c = lane % vec, rowStep = 32 / vec;
    for (int row = lane / vec; row < kIdxWarpRows; row += rowStep) {
      const bool ok = p0 + row < len;
      mla_cp_async16(dst + row * ld + 16 * c, ok ? base + row * rowBytes + 16 * c : src, ok);
    }
    return p < len ? slot0 + lane : 0;
  }
  const int slot = p < len ? table[p / blockSize] * blockSize + p % blockSize : 0;
  for (int i = lane; i < kIdxWarpRows * vec; i += 32) {
    const int row = i / vec, c = i - row * vec;
    const size_t s = static_cast<size_t>(__shfl_sync(0xffffffffu, slot, row));
    const bool ok = p0 + row < len;
    mla_cp_async16(dst + row * ld + 16 * c, ok ? src + s * rowBytes + 16 * c : src, ok);
  }
  return slot;
}

// One cp.async group per warp step: the bf16 key rows of positions p0 .. p0+31 into a stage (an
// empty group from len on, so that every step commits one).
__device__ __forceinline__ void idx_warp_issue_keys(unsigned char* stage, int ldk,
                                                    const uint16_t* keys, const int* table, int p0,
                                                    int len, int dim, int blockSize) {
  if (p0 < len) {
    idx_warp_copy(stage, ldk * 2, reinterpret_cast<const unsigned char*>(keys), dim * 2, table, p0,
                  len, blockSize);
  }
  mla_cp_async_commit();
}

// One warp's dot products of its 32 key rows ks (row stride ldk) with the query's N = 16 * nTiles
// heads (qHi and, when qLo is non-null, qLo: [N][ldk], col-major B operands), stored as f32 [32][N]
// at dots (row stride ldc), which may overlay ks. Every 16 x 16 accumulator takes its k steps in
// order, hi then lo per step, from zero: the products and sums of a single-tile WMMA loop.
__device__ __forceinline__ void idx_warp_dots(float* dots, int ldc, const __nv_bfloat16* ks,
                                              int ldk, const __nv_bfloat16* qHi,
                                              const __nv_bfloat16* qLo, int nTiles, int dim) {
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kIdxWarpMTiles][kIdxMaxNTiles];
#pragma unroll
  for (int m = 0; m < kIdxWarpMTiles; m++) {
#pragma unroll
    for (int n = 0; n < kIdxMaxNTiles; n++) {
      if (n < nTiles) wmma::fill_fragment(acc[m][n], 0.f);
    }
  }
  for (int k0 = 0; k0 < dim; k0 += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[kIdxWarpMTiles];
#pragma unroll
    for (int m = 0; m < kIdxWarpMTiles; m++) {
      wmma::load_matrix_sync(a[m], ks + 16 * m * ldk + k0, ldk);
    }
#pragma unroll
    for (int n = 0; n < kIdxMaxNTiles; n++) {
      if (n < nTiles) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(b, qHi + 16 * n * ldk + k0, ldk);
#pragma unroll
        for (int m = 0; m < kIdxWarpMTiles; m++) wmma::mma_sync(acc[m][n], a[m], b, acc[m][n]);
        if (qLo != nullptr) {
          wmma::load_matrix_sync(b, qLo + 16 * n * ldk + k0, ldk);
#pragma unroll
          for (int m = 0; m < kIdxWarpMTiles; m++) wmma::mma_sync(acc[m][n], a[m], b, acc[m][n]);
        }
      }
    }
  }
  __syncwarp();  // every lane's fragment loads of ks are done: the dots may overwrite it
#pragma unroll
  for (int m = 0; m < kIdxWarpMTiles; m++) {
#pragma unroll
    for (int n = 0; n < kIdxMaxNTiles; n++) {
      if (n < nTiles) {
        wmma::store_matrix_sync(dots + 16 * m * ldc + 16 * n, acc[m][n], ldc, wmma::mem_row_major);
      }
    }
  }
  __syncwarp();
}

// sum_h ws[h] * relu(dots[h] * scale) (kScaled) or sum_h ws[h] * relu(dots[h]) over h = 0 ..
// heads-1 in order, for one lane's row of dots (16-byte aligned): 16-byte reads, which an odd
// number of 16-byte units per row (N + 4 floats) keeps free of bank conflicts across 32 rows.
template <bool kScaled>
__device__ __forceinline__ float idx_reduce_heads(const float* dots, const float* ws, int heads,
                                                  float scale) {
  auto term = [&](int h, float dot) { return ws[h] * fmaxf(kScaled ? dot * scale : dot, 0.f); };
  float sum = 0.f;
  int h = 0;
  for (; h + 4 <= heads; h += 4) {
    const float4 d = *reinterpret_cast<const float4*>(dots + h);
    sum += term(h, d.x);
    sum += term(h + 1, d.y);
    sum += term(h + 2, d.z);
    sum += term(h + 3, d.w);
  }
  for (; h < heads; h++) sum += term(h, dots[h]);
  return sum;
}

// rm_indexer_scores on tensor cores, the same contract (dim % 16 == 0, heads <= 64). The query is
// staged as two bf16 parts, hi = bf16(q) and lo = bf16(q - hi), whose products with the bf16 keys
// accumulate in f32: about 16 significant bits of the f32 query (8 with hi alone), so scores stay
// within ~1e-5 of the CUDA-core kernel's and near-ties select alike.
// Mapping: grid (position blocks, rows), blockDim.x / 32 warps (at most kIdxScoreMaxWarps); a
// block exits at once when its first step lies past the row's context (a graph's fixed grid covers
// the longest context). Block b's warp w scores positions p0 = (b * warps + w) * 32, striding by
// gridDim.x * warps * 32: the warp keeps kIdxBf16Stages - 1 of its key tiles in flight by cp.async
// (zeros past the context) while it computes one, its 32 x N dots by WMMA (idx_warp_dots), and
// each lane reduces one position's heads in head order: sum_h (w[h] * headScale) * relu(dot *
// scale).
RM_KERNEL void __launch_bounds__(kIdxScoreMaxWarps * 32)
    rm_indexer_scores_mma(float* scores, int ldScores, const float* q, const float* w,
                          const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                          const int* tokenSeq, const int* tokenPos, int rowBase, int heads, int dim,
                          int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  extern __shared__ __align__(128) unsigned char idxMmaSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (blockIdx.x * warps * kIdxWarpRows >= len) return;
  const IdxMmaSmem L(heads, dim, warps);
  __nv_bfloat16* qHi = reinterpret_cast<__nv_bfloat16*>(idxMmaSmem + L.qHi);
  __nv_bfloat16* qLo = reinterpret_cast<__nv_bfloat16*>(idxMmaSmem + L.qLo);
  float* ws = reinterpret_cast<float*>(idxMmaSmem + L.weights);
  unsigned char* ring = idxMmaSmem + L.ring + warp * kIdxBf16Stages * L.stage;
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * warps * kIdxWarpRows;
  const int first = (blockIdx.x * warps + warp) * kIdxWarpRows;
  // The first stages' copies run while the block stages the query.
  for (int i = 0; i < kIdxBf16Stages - 1; i++) {
    idx_warp_issue_keys(ring + i * L.stage, L.ldk, keys, table, first + i * step, len, dim,
                        blockSize);
  }
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
#pragma unroll 4
  for (int i = 4 * threadIdx.x; i < L.n * dim; i += 4 * blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    const float4 v4 = h < heads ? *reinterpret_cast<const float4*>(qr + i) : float4{0, 0, 0, 0};
    const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const uint16_t hi = f32_to_bf16_bits(v[j]);
      qHi[h * L.ldk + d + j] = __ushort_as_bfloat16(hi);
      qLo[h * L.ldk + d + j] = __ushort_as_bfloat16(f32_to_bf16_bits(v[j] - bf16_bits_to_f32(hi)));
    }
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    ws[h] = h < heads ? w[static_cast<size_t>(t) * heads + h] * headScale : 0.f;
  }
  __syncthreads();  // the only block barrier: the query and weights are staged
  float* out = scores + static_cast<size_t>(r) * ldScores;
  int i = 0;
  for (int p0 = first; p0 < len; p0 += step, i++) {
    mla_cp_async_wait<kIdxBf16Stages - 2>();  // this step's group is complete
    __syncwarp();                             // and visible to the whole warp
    // The stage the previous step used (its reads finished before that step's last __syncwarp).
    idx_warp_issue_keys(ring + (i + kIdxBf16Stages - 1) % kIdxBf16Stages * L.stage, L.ldk, keys,
                        table, p0 + (kIdxBf16Stages - 1) * step, len, dim, blockSize);
    unsigned char* stage = ring + i % kIdxBf16Stages * L.stage;
    float* dots = reinterpret_cast<float*>(stage);
    idx_warp_dots(dots, L.ldc, reinterpret_cast<const __nv_bfloat16*>(stage), L.ldk, qHi, qLo,
                  L.n / 16, dim);
    const float sum = idx_reduce_heads<true>(dots + lane * L.ldc, ws, heads, scale);
    if (p0 + lane < len) out[p0 + lane] = sum;
    __syncwarp();  // the stage is read: a later step's copy may overwrite it
  }
}

// Order key of a score: smaller key = higher score (+0 and -0 equal), as the CPU's sort key.
__device__ __forceinline__ uint32_t idx_desc_key(float s) {
  const uint32_t b = __float_as_uint(s + 0.f);
  const uint32_t asc = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ~asc;
}

// Exclusive prefix sum over the block of each thread's v; *total gets the block's sum.
// scratch: 32 ints. blockDim.x % 32 == 0.
__device__ __forceinline__ int block_exclusive_scan(int v, int* scratch, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();  // scratch may still be read by the previous scan
  if (lane == 31) scratch[warp] = x;
  __syncthreads();
  int before = 0, all = 0;
  for (int i = 0; i < warps; i++) {
    const int s = scratch[i];
    if (i < warp) before += s;
    all += s;
  }
  *total = all;
  return before + x - v;
}

// The ordered pass of a top-k selection over positions begin .. end-1 of a score row, once the
// topK-th smallest order key `prefix` is known and `remaining` of the keys equal to it are taken:
// writes every position with a smaller key and the earliest equal ones (equalSeen of them came
// before `begin`, `written` entries of out are already filled), ascending, by block-wide prefix
// sums. Returns the entries written so far.
__device__ __forceinline__ int idx_write_selected(int* out, const float* row, int begin, int end,
                                                  uint32_t prefix, int remaining, int equalSeen,
                                                  int written, int* scratch) {
  for (int p0 = begin; p0 < end; p0 += blockDim.x) {
    const int p = p0 + threadIdx.x;
    const uint32_t k = p < end ? idx_desc_key(row[p]) : 0xffffffffu;
    const bool less = p < end && k < prefix;
    const bool equal = p < end && k == prefix;
    int equals;
    const int eqBefore = block_exclusive_scan(equal ? 1 : 0, scratch, &equals);
    const bool take = less || (equal && equalSeen + eqBefore < remaining);
    int taken;
    const int slot = block_exclusive_scan(take ? 1 : 0, scratch, &taken);
    if (take) out[written + slot] = p;
    written += taken;
    equalSeen += equals;
  }
  return written;
}

// sel[t, 0:topK] for the query token t = rowBase + r (row r of scores, positions 0 .. tokenPos[t]):
// the topK highest scores' positions, ties to the earlier position, ascending; a context of at
// most topK positions lists them all. Unused entries are -1.
// Mapping: one block of 1024 threads per row. A radix select on the 32-bit order keys (four passes
// of 8 bits, histograms in shared memory) finds the topK-th key T and how many keys equal to T
// are taken; one ordered pass over the positions then writes every key < T and the first of the
// keys == T, with block-wide prefix sums giving each its output slot, so the result is the
// CPU's set in ascending order, independent of scheduling.
RM_KERNEL void rm_indexer_topk(int* sel, int topK, const float* scores, int ldScores,
                               const int* tokenPos, int rowBase) {
  rm_pdl_prologue();
  __shared__ int hist[256];
  __shared__ int scratch[32];
  __shared__ uint32_t sPrefix;
  __shared__ int sRemaining;
  const int r = blockIdx.x, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  int* out = sel + static_cast<size_t>(t) * topK;
  if (len <= topK) {
    for (int i = threadIdx.x; i < topK; i += blockDim.x) out[i] = i < len ? i : -1;
    return;
  }
  const float* row = scores + static_cast<size_t>(r) * ldScores;
  uint32_t prefix = 0, mask = 0;
  int remaining = topK;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int p = threadIdx.x; p < len; p += blockDim.x) {
      const uint32_t k = idx_desc_key(row[p]);
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int cum = 0, b = 0;
      while (cum + hist[b] < remaining) cum += hist[b++];
      sPrefix = prefix | (static_cast<uint32_t>(b) << shift);
      sRemaining = remaining - cum;
    }
    __syncthreads();
    prefix = sPrefix;
    remaining = sRemaining;
    mask |= 255u << shift;
    __syncthreads();
  }
  // prefix is the topK-th smallest key; `remaining` of the keys equal to it are taken.
  const int written = idx_write_selected(out, row, 0, len, prefix, remaining, 0, 0, scratch);
  for (int i = written + threadIdx.x; i < topK; i += blockDim.x) out[i] = -1;
}

// Multi-block top-k: the selection of rm_indexer_topk with every row spread over gridDim.x blocks,
// so that a few long rows (batch 1 at 128k positions) use the GPU. Six launches of this kernel,
// pass = 0 .. 5, over a zeroed state of kIdxTopkState + 2 * gridDim.x ints per row:
// - passes 0-3: the radix select's histograms of bits 31-24, 23-16, 15-8, 7-0 of the order keys,
//   each block adding its chunk's counts (shared-memory histogram first) to the row's global one;
//   before pass p a block follows passes 0 .. p-1 to the keys' prefix so far;
// - pass 4: each block counts its chunk's keys below and equal to the topK-th key T;
// - pass 5: each block sums the counts of the chunks before its own, which gives its first output
//   slot and how many keys equal to T earlier chunks took, and writes its chunk in order.
// The result is rm_indexer_topk's, bit for bit: the same set (ties to the earlier position), the
// same ascending order. A row of at most topK positions lists them all (pass 5) and is skipped by
// the others; blocks whose chunk starts past the row's context exit (a graph's grid covers the
// longest context). Chunks: ceil(len / gridDim.x) positions rounded up to the block size.
constexpr int kIdxTopkState = 4 * 256;

// Follows the radix select's histograms 0 .. passes-1 of one row (global, 256 bins each) to the
// order-key prefix they fix and how many keys with that prefix are still to be taken. Warp 0 scans
// each histogram (8 bins per lane); the result is published in shared memory to the whole block.
__device__ __forceinline__ void idx_follow_histograms(const int* hists, int passes, int topK,
                                                      uint32_t* prefixOut, int* remainingOut) {
  __shared__ uint32_t sPrefix;
  __shared__ int sRemaining;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    uint32_t prefix = 0;
    int remaining = topK;
    for (int pass = 0; pass < passes; pass++) {
      const int* h = hists + pass * 256 + 8 * lane;
      int bins[8], own = 0;
#pragma unroll
      for (int i = 0; i < 8; i++) {
        bins[i] = h[i];
        own += bins[i];
      }
      int incl = own;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
      }
      const int before = incl - own;
      // the lane whose bins hold the remaining-th key: the first with an inclusive sum >= remaining
      const unsigned hit = __ballot_sync(0xffffffffu, incl >= remaining);
      const int owner = __ffs(hit) - 1;
      int bin = 0, cum = before;
      if (lane == owner) {
        while (cum + bins[bin] < remaining) cum += bins[bin++];
      }
      bin = __shfl_sync(0xffffffffu, 8 * lane + bin, owner);
      cum = __shfl_sync(0xffffffffu, cum, owner);
      prefix |= static_cast<uint32_t>(bin) << (24 - 8 * pass);
      remaining -= cum;
    }
    if (lane == 0) {
      sPrefix = prefix;
      sRemaining = remaining;
    }
  }
  __syncthreads();
  *prefixOut = sPrefix;
  *remainingOut = sRemaining;
}

// Block c's chunk of a row of a multi-block top-k launch (rm_indexer_topk_multi,
// rm_indexer_topk_cand): ceil(len / gridDim.x) positions rounded up to the block size, [begin,
// end). A row no longer than topK selects all of its positions: the launch's writing pass
// (writePass) writes them, -1 past the end, and no block takes a chunk. Returns whether the block
// has positions to take (false: it exits).
__device__ __forceinline__ bool topk_row_chunk(int* out, int topK, int len, int c, bool writePass,
                                               int* chunk, int* begin, int* end) {
  if (len <= topK) {
    if (writePass) {
      for (int i = c * blockDim.x + threadIdx.x; i < topK; i += gridDim.x * blockDim.x) {
        out[i] = i < len ? i : -1;
      }
    }
    return false;
  }
  const int per = (len + gridDim.x - 1) / gridDim.x;
  *chunk = (per + blockDim.x - 1) / blockDim.x * blockDim.x;
  *begin = c * *chunk;
  *end = min(len, *begin + *chunk);
  return *begin < *end;
}

RM_KERNEL void rm_indexer_topk_multi(int* sel, int topK, const float* scores, int ldScores,
                                     const int* tokenPos, int rowBase, int* state, int pass) {
  rm_pdl_prologue();
  __shared__ int hist[256];
  __shared__ int scratch[32];
  const int r = blockIdx.y, t = rowBase + r, c = blockIdx.x;
  const int len = tokenPos[t] + 1;
  int* out = sel + static_cast<size_t>(t) * topK;
  int chunk, begin, end;
  // A block without a chunk exits: pass 5 reads its chunk's counts, which pass 4 left zero.
  if (!topk_row_chunk(out, topK, len, c, pass == 5, &chunk, &begin, &end)) return;
  int* rowState = state + static_cast<size_t>(r) * (kIdxTopkState + 2 * gridDim.x);
  int* counts = rowState + kIdxTopkState;  // [chunk] = (keys < T, keys == T)
  const float* row = scores + static_cast<size_t>(r) * ldScores;
  uint32_t prefix;
  int remaining;
  idx_follow_histograms(rowState, min(pass, 4), topK, &prefix, &remaining);
  if (pass < 4) {
    const int shift = 24 - 8 * pass;
    const uint32_t mask = pass == 0 ? 0u : 0xffffffffu << (shift + 8);
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int p = begin + threadIdx.x; p < end; p += blockDim.x) {
      const uint32_t k = idx_desc_key(row[p]);
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
      if (hist[i] != 0) atomicAdd(&rowState[pass * 256 + i], hist[i]);
    }
    return;
  }
  if (pass == 4) {
    int less = 0, equal = 0;
    for (int p = begin + threadIdx.x; p < end; p += blockDim.x) {
      const uint32_t k = idx_desc_key(row[p]);
      less += k < prefix;
      equal += k == prefix;
    }
    int lessAll, equalAll;
    block_exclusive_scan(less, scratch, &lessAll);
    block_exclusive_scan(equal, scratch, &equalAll);
    if (threadIdx.x == 0) {
      counts[2 * c] = lessAll;
      counts[2 * c + 1] = equalAll;
    }
    return;
  }
  int lessBefore = 0, equalBefore = 0;
  for (int i = threadIdx.x; i < c; i += blockDim.x) {
    lessBefore += counts[2 * i];
    equalBefore += counts[2 * i + 1];
  }
  int sum;
  block_exclusive_scan(lessBefore, scratch, &sum);
  lessBefore = sum;
  block_exclusive_scan(equalBefore, scratch, &sum);
  equalBefore = sum;
  idx_write_selected(out, row, begin, end, prefix, remaining, equalBefore,
                     lessBefore + min(equalBefore, remaining), scratch);
}

constexpr int kSparseMaxPerLane = 20;  // D <= 640
constexpr int kSparseWarps = 8;

// rm_mla_decode_split over a selection: query token t (tokenList[z], or z) attends to the
// positions sel[t, 0:count) (count = min(tokenPos[t] + 1, topK)) of its sequence; split s covers
// entries [s*chunk, min((s+1)*chunk, count)) of that list, chunk = ceil(count / splits). Partials
// as rm_mla_decode_split writes them (rm_mla_combine merges them).
// Mapping: grid (ceil(heads / 8), splits, tokens), 8 warps per block, one warp per head; lane l
// holds dims l, l+32, ... of the absorbed query and of its context accumulator.
RM_KERNEL void rm_mla_sparse_split(float* pCtx, float* pMax, float* pSum, const float* q,
                                   const uint16_t* cache, const int* blockTable,
                                   int maxBlocksPerSeq, const int* tokenSeq, const int* tokenPos,
                                   const int* sel, int topK, const int* tokenList, int heads,
                                   int kvLora, int ropeDim, int blockSize, int splits, float scale) {
  rm_pdl_prologue();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = blockIdx.x * kSparseWarps + warp, s = blockIdx.y;
  const int t = tokenList != nullptr ? tokenList[blockIdx.z] : blockIdx.z;
  if (h >= heads) return;
  const int D = kvLora + ropeDim;
  const int count = min(tokenPos[t] + 1, topK);
  const int chunk = (count + splits - 1) / splits;
  const int begin = s * chunk, end = min(count, begin + chunk);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int* list = sel + static_cast<size_t>(t) * topK;
  const float* qr = q + (static_cast<size_t>(t) * heads + h) * D;
  float qv[kSparseMaxPerLane], acc[kSparseMaxPerLane];
#pragma unroll
  for (int j = 0; j < kSparseMaxPerLane; j++) {
    const int d = lane + 32 * j;
    qv[j] = d < D ? qr[d] : 0.f;
    acc[j] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int i = begin; i < end; i++) {
    const int p = list[i];
    const uint16_t* kr =
        cache + (static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize) * D;
    float kv[kSparseMaxPerLane];
    float dot = 0.f;
#pragma unroll
    for (int j = 0; j < kSparseMaxPerLane; j++) {
      const int d = lane + 32 * j;
      kv[j] = d < D ? bf16_bits_to_f32(kr[d]) : 0.f;
      dot += qv[j] * kv[j];
    }
    dot = warp_sum(dot);
    const float sc = dot * scale;
    const float mNew = fmaxf(m, sc);
    const float corr = expf(m - mNew);
    const float e = expf(sc - mNew);
    l = l * corr + e;
#pragma unroll
    for (int j = 0; j < kSparseMaxPerLane; j++) {
      if (lane + 32 * j < kvLora) acc[j] = acc[j] * corr + e * kv[j];
    }
    m = mNew;
  }
  const size_t part = (static_cast<size_t>(t) * heads + h) * splits + s;
  if (lane == 0) {
    pMax[part] = m;
    pSum[part] = l;
  }
  float* pc = pCtx + part * kvLora;
#pragma unroll
  for (int j = 0; j < kSparseMaxPerLane; j++) {
    const int d = lane + 32 * j;
    if (d < kvLora) pc[d] = acc[j];
  }
}

// The prefill form of rm_indexer_scores, after a GEMM: S [rows * heads, ctx] (f32, row r * heads + h
// holds q[t, h] . key[p] for the query token t = rowBase + r and positions p < ctx of its sequence)
// reduced to scores[r, p] = sum_h (w[t, h] * headScale) * relu(S[r * heads + h, p] * scale) for
// p <= tokenPos[t] (the rest of the row is not written), heads in order as the CUDA-core kernel.
// Mapping: grid (ceil(ctx / 256), rows), a thread per position: coalesced reads of S.
RM_KERNEL void rm_indexer_reduce(float* scores, int ldScores, const float* S, int ctx,
                                 const float* w, const int* tokenPos, int rowBase, int heads,
                                 float scale, float headScale) {
  rm_pdl_prologue();
  const int r = blockIdx.y, t = rowBase + r;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p > tokenPos[t] || p >= ctx) return;
  const float* wr = w + static_cast<size_t>(t) * heads;
  const float* sr = S + static_cast<size_t>(r) * heads * ctx + p;
  float sum = 0.f;
  for (int h = 0; h < heads; h++) {
    sum += (wr[h] * headScale) * fmaxf(sr[static_cast<size_t>(h) * ctx] * scale, 0.f);
  }
  scores[static_cast<size_t>(r) * ldScores + p] = sum;
}

// x (f32) as the sum of two bf16 parts: hi = bf16(x), lo = bf16(x - hi). A product with hi and lo
// accumulated in f32 carries about 16 significant bits of x instead of 8, so the prefill GEMMs of
// rm_indexer_reduce's input score nearly as the f32 CUDA-core kernel does.
// Mapping: a thread per element.
RM_KERNEL void rm_bf16_split(uint16_t* hi, uint16_t* lo, const float* x, long long n) {
  rm_pdl_prologue();
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint16_t h = f32_to_bf16_bits(x[i]);
  hi[i] = h;
  lo[i] = f32_to_bf16_bits(x[i] - bf16_bits_to_f32(h));
}
