// MLA attention on tensor cores (bf16 operands, f32 accumulation), two shapes of the same absorbed
// attention as mla_attention.cu:
//
// - Decode (rm_mla_decode_split_mma): one block per (16 heads, split, query token). Every head of a
//   token reads the same cache rows, so the block loads a tile of 32 rows into shared memory once and
//   computes the 16 x 32 score tile and the 16 x kvLora context update with WMMA, instead of one warp
//   per head walking the rows. Writes the same split partials as rm_mla_decode_split, so
//   rm_mla_combine merges them. rm_mla_sparse_split_mma(2) is the same kernel reading the rows
//   through each token's selection list (DeepSeek Sparse Attention, decode and prefill alike).
// - Prefill (rm_mla_gather_ctx + two cuBLAS batched GEMMs + rm_mla_prefill_softmax): the queries of
//   one sequence against its gathered context, scores materialised in f32 (host code in
//   MlaPrefillAttention.java drives it).
//
// Numerics differ from the CUDA-core kernel in two roundings: the absorbed query and the
// probabilities are rounded to bf16 before their products (FlashMLA does the same); the softmax sums
// the rounded probabilities, so the weights used for the context sum to one exactly as computed.
#pragma once
#include <mma.h>
#include "common.cuh"

constexpr int kMmaHeads = 16;   // query rows per block: the WMMA M dimension
constexpr int kMmaTile = 32;    // cache positions per tile
constexpr int kMmaKGroups = 2;  // warps that split the score dot products over D
constexpr int kMmaThreads = 256;

// Shared-memory layout of the decode kernel, in bytes from the start (each part 128-byte aligned);
// `stages` cache tiles (two: the next tile loads while the current one is computed).
struct MlaMmaSmem {
  int ldq, ldAcc, q, k, kStride, scores, probs, acc, rows, total;
  __host__ __device__ MlaMmaSmem(int D, int kvLora, int stages) {
    ldq = D + 8;           // bf16 row stride: a multiple of 8 that shifts rows by 4 banks
    ldAcc = kvLora + 4;    // f32 row stride
    auto up = [](int b) { return (b + 127) & ~127; };
    q = 0;
    k = q + up(kMmaHeads * ldq * 2);
    kStride = up(kMmaTile * ldq * 2);
    scores = k + stages * kStride;
    probs = scores + up(kMmaKGroups * kMmaHeads * (kMmaTile + 4) * 4);
    acc = probs + up(kMmaHeads * (kMmaTile + 8) * 2);
    rows = acc + up(kMmaHeads * ldAcc * 4);
    total = rows + 3 * kMmaHeads * 4;
  }
};

// 16-byte asynchronous global -> shared copy (L2 only), zero-filled without a read when !ok.
__device__ __forceinline__ void mla_cp_async16(void* dst, const void* src, bool ok) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void mla_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void mla_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Starts copying the cache rows of entries e0 .. e0+31 (zeros from `end` on) into ks, as one
// cp.async group: entry e is position e, or list[e] when a selection list is given (sparse
// attention). Warp w copies rows w, w+8, w+16, w+24: their list and block-table lookups are issued
// together, then every 16-byte piece of the tile is in flight at once (a synchronous loop of loads
// waits one memory latency per piece, which starved this kernel).
__device__ __forceinline__ void mla_issue_tile(__nv_bfloat16* ks, int ldq, const uint16_t* cache,
                                               const int* table, const int* list, int e0, int end,
                                               int D, int blockSize, int warp, int lane) {
  constexpr int kWarps = kMmaThreads / 32;
  const int vecPerRow = D / 8;
  int pos[kMmaTile / kWarps], block[kMmaTile / kWarps];
#pragma unroll
  for (int j = 0; j < kMmaTile / kWarps; j++) {
    const int e = e0 + warp + kWarps * j;
    pos[j] = e < end ? (list != nullptr ? list[e] : e) : 0;
  }
#pragma unroll
  for (int j = 0; j < kMmaTile / kWarps; j++) {
    const int e = e0 + warp + kWarps * j;
    block[j] = e < end ? table[pos[j] / blockSize] : 0;
  }
#pragma unroll
  for (int j = 0; j < kMmaTile / kWarps; j++) {
    const int r = warp + kWarps * j;
    const bool ok = e0 + r < end;
    const uint16_t* row =
        ok ? cache + (static_cast<size_t>(block[j]) * blockSize + pos[j] % blockSize) * D : cache;
    for (int c = lane; c < vecPerRow; c += 32) mla_cp_async16(ks + r * ldq + 8 * c, row + 8 * c, ok);
  }
  mla_cp_async_commit();
}

// Same contract as rm_mla_decode_split (see mla_attention.cu), for query tokens tokenList[z] (or z
// when tokenList is null), except that a split covers at least minChunk positions: a graph captured
// with many splits for a long nominal context then leaves the surplus splits empty on a short one
// instead of spreading a few positions over each. Needs kvLora % 16 == 0 and ropeDim % 16 == 0.
// With a selection (sel non-null, DeepSeek Sparse Attention) token t attends to the positions
// sel[t, 0:count), count = min(tokenPos[t] + 1, topK), and the splits cover entries of that list
// instead of positions: the same tiles, read through the list.
// Mapping: grid (ceil(heads / 16), splits, tokens), 8 warps. Per tile of 32 positions: the rows
// arrive by cp.async (with STAGES = 2 the next tile's copy overlaps this tile's math); warps 0-3
// compute the score tile (warp w: positions 16*(w&1).., half (w>>1) of the D dims), the two halves
// summed in a fixed order; warp w then owns the softmax update of heads 2w, 2w+1 (lane = position)
// and the context columns of n-tiles w, w+8, ...: it rescales them by the running-max correction
// and adds P . V.
template <int STAGES>
__device__ __forceinline__ void mla_decode_split_mma(
    float* pCtx, float* pMax, float* pSum, const float* q, const uint16_t* cache,
    const int* blockTable, int maxBlocksPerSeq, const int* tokenSeq, const int* tokenPos,
    const int* tokenList, const int* sel, int topK, int heads, int kvLora, int ropeDim,
    int blockSize, int splits, int minChunk, float scale) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char mlaSmem[];
  const int D = kvLora + ropeDim;
  const MlaMmaSmem L(D, kvLora, STAGES);
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(mlaSmem + L.q);
  float* sp = reinterpret_cast<float*>(mlaSmem + L.scores);
  __nv_bfloat16* pb = reinterpret_cast<__nv_bfloat16*>(mlaSmem + L.probs);
  float* acc = reinterpret_cast<float*>(mlaSmem + L.acc);
  float* mrow = reinterpret_cast<float*>(mlaSmem + L.rows);
  float* lrow = mrow + kMmaHeads;
  float* crow = lrow + kMmaHeads;
  constexpr int ldS = kMmaTile + 4, ldP = kMmaTile + 8;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h0 = blockIdx.x * kMmaHeads, s = blockIdx.y;
  const int t = tokenList != nullptr ? tokenList[blockIdx.z] : blockIdx.z;
  const int* list = sel != nullptr ? sel + static_cast<size_t>(t) * topK : nullptr;
  const int len = sel != nullptr ? min(tokenPos[t] + 1, topK) : tokenPos[t] + 1;
  const int chunk = max((len + splits - 1) / splits, minChunk);
  const int begin = s * chunk, end = min(len, begin + chunk);
  if (begin >= end) {  // a surplus split: an empty partial, skipped by the combine
    for (int r = warp; r < kMmaHeads && h0 + r < heads; r += kMmaThreads / 32) {
      const size_t part = (static_cast<size_t>(t) * heads + h0 + r) * splits + s;
      if (lane == 0) {
        pMax[part] = -INFINITY;
        pSum[part] = 0.f;
      }
      for (int c = lane; c < kvLora; c += 32) pCtx[part * kvLora + c] = 0.f;
    }
    return;
  }
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  auto kTile = [&](int buf) {
    return reinterpret_cast<__nv_bfloat16*>(mlaSmem + L.k + buf * L.kStride);
  };
  if (STAGES == 2) mla_issue_tile(kTile(0), L.ldq, cache, table, list, begin, end, D, blockSize, warp,
                                 lane);

  {  // the 16 heads' queries, f32 -> bf16: four float4 loads in flight per thread at a time
    const int n4 = kMmaHeads * D / 4, valid4 = min(heads - h0, kMmaHeads) * D / 4;
    const float4* q4 = reinterpret_cast<const float4*>(q + (static_cast<size_t>(t) * heads + h0) * D);
    for (int base = threadIdx.x; base < n4; base += 4 * kMmaThreads) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int i = base + u * kMmaThreads;
        v[u] = i < valid4 ? __ldg(q4 + i) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int i = base + u * kMmaThreads;
        if (i < n4) {
          const int r = 4 * i / D, d = 4 * i - r * D;
          uint2 packed;
          packed.x = static_cast<uint32_t>(f32_to_bf16_bits(v[u].x)) |
                     (static_cast<uint32_t>(f32_to_bf16_bits(v[u].y)) << 16);
          packed.y = static_cast<uint32_t>(f32_to_bf16_bits(v[u].z)) |
                     (static_cast<uint32_t>(f32_to_bf16_bits(v[u].w)) << 16);
          *reinterpret_cast<uint2*>(qs + r * L.ldq + d) = packed;
        }
      }
    }
  }
  for (int i = threadIdx.x; i < kMmaHeads * L.ldAcc; i += blockDim.x) acc[i] = 0.f;
  if (threadIdx.x < kMmaHeads) {
    mrow[threadIdx.x] = -INFINITY;
    lrow[threadIdx.x] = 0.f;
  }

  int buf = 0;
  for (int p0 = begin; p0 < end; p0 += kMmaTile, buf ^= (STAGES - 1)) {
    __syncthreads();  // the previous tile's rows and probabilities are no longer read
    const bool next = p0 + kMmaTile < end;
    if (STAGES == 2) {
      if (next) {
        mla_issue_tile(kTile(buf ^ 1), L.ldq, cache, table, list, p0 + kMmaTile, end, D, blockSize,
                       warp, lane);
        mla_cp_async_wait<1>();  // this tile's group is complete, the next one may still run
      } else {
        mla_cp_async_wait<0>();
      }
    } else {
      mla_issue_tile(kTile(0), L.ldq, cache, table, list, p0, end, D, blockSize, warp, lane);
      mla_cp_async_wait<0>();
    }
    __syncthreads();
    const __nv_bfloat16* ks = kTile(buf);
    if (warp < 2 * kMmaKGroups) {
      const int n0 = 16 * (warp & 1), g = warp >> 1;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.f);
      for (int k0 = 16 * g; k0 < D; k0 += 16 * kMmaKGroups) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(a, qs + k0, L.ldq);
        wmma::load_matrix_sync(b, ks + n0 * L.ldq + k0, L.ldq);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(sp + g * kMmaHeads * ldS + n0, c, ldS, wmma::mem_row_major);
    }
    __syncthreads();
    for (int r = 2 * warp; r < 2 * warp + 2; r++) {
      const bool valid = p0 + lane < end;
      float sc = 0.f;
#pragma unroll
      for (int g = 0; g < kMmaKGroups; g++) sc += sp[(g * kMmaHeads + r) * ldS + lane];
      sc = valid ? sc * scale : -INFINITY;
      const float mOld = mrow[r];
      const float mNew = fmaxf(mOld, warp_max(sc));  // finite: position p0 < end is valid
      const __nv_bfloat16 pv = __float2bfloat16_rn(valid ? expf(sc - mNew) : 0.f);
      pb[r * ldP + lane] = pv;
      const float sum = warp_sum(__bfloat162float(pv));
      __syncwarp();
      if (lane == 0) {
        const float corr = expf(mOld - mNew);
        lrow[r] = lrow[r] * corr + sum;
        mrow[r] = mNew;
        crow[r] = corr;
      }
    }
    __syncthreads();
    // Rescale the context rows whose running max moved. Not on the first tile (the accumulator is
    // still zero) nor where no row's max moved, which after the first tiles is most of them: this
    // pass read and wrote the whole 16 x kvLora accumulator in shared memory once per tile.
    bool rescale = p0 != begin;
    if (rescale) {
      bool moved = false;
#pragma unroll
      for (int r = 0; r < kMmaHeads; r++) moved |= crow[r] != 1.f;
      rescale = moved;  // the same on every thread: crow is shared and stable until the next tile
    }
    for (int n0 = 16 * warp; n0 < kvLora; n0 += 16 * (kMmaThreads / 32)) {
      if (rescale) {
        // lane -> row (lane & 7) (+ 8), column n0 + 4i + (lane >> 3): the row stride is 4 banks
        // (ldAcc = kvLora + 4), so the 32 lanes hit 32 different banks on every access (the
        // mapping before, two lanes per row, hit 8 banks four times each: about half of the
        // kernel's shared-memory wavefronts were those conflicts)
#pragma unroll
        for (int i = 0; i < 8; i++) {
          const int r = (lane & 7) + 8 * (i & 1), c = n0 + 4 * (i >> 1) + (lane >> 3);
          acc[r * L.ldAcc + c] *= crow[r];
        }
      }
      __syncwarp();
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::load_matrix_sync(c, acc + n0, L.ldAcc, wmma::mem_row_major);
#pragma unroll
      for (int k0 = 0; k0 < kMmaTile; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, pb + k0, ldP);
        wmma::load_matrix_sync(b, ks + k0 * L.ldq + n0, L.ldq);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(acc + n0, c, L.ldAcc, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int r = warp; r < kMmaHeads; r += kMmaThreads / 32) {
    const int h = h0 + r;
    if (h >= heads) continue;
    const size_t part = (static_cast<size_t>(t) * heads + h) * splits + s;
    if (lane == 0) {
      pMax[part] = mrow[r];
      pSum[part] = lrow[r];
    }
    float* pc = pCtx + part * kvLora;
    for (int c = lane; c < kvLora; c += 32) pc[c] = acc[r * L.ldAcc + c];
  }
}

// One cache tile at a time: ~95 KB of shared memory, two blocks per SM.
RM_KERNEL void __launch_bounds__(kMmaThreads)
    rm_mla_decode_split_mma(float* pCtx, float* pMax, float* pSum, const float* q,
                            const uint16_t* cache, const int* blockTable, int maxBlocksPerSeq,
                            const int* tokenSeq, const int* tokenPos, const int* tokenList,
                            int heads, int kvLora, int ropeDim, int blockSize, int splits,
                            int minChunk, float scale) {
  rm_pdl_prologue();
  mla_decode_split_mma<1>(pCtx, pMax, pSum, q, cache, blockTable, maxBlocksPerSeq, tokenSeq,
                          tokenPos, tokenList, nullptr, 0, heads, kvLora, ropeDim, blockSize, splits,
                          minChunk, scale);
}

// Double-buffered tiles: ~132 KB of shared memory, one block per SM.
RM_KERNEL void __launch_bounds__(kMmaThreads)
    rm_mla_decode_split_mma2(float* pCtx, float* pMax, float* pSum, const float* q,
                             const uint16_t* cache, const int* blockTable, int maxBlocksPerSeq,
                             const int* tokenSeq, const int* tokenPos, const int* tokenList,
                             int heads, int kvLora, int ropeDim, int blockSize, int splits,
                             int minChunk, float scale) {
  rm_pdl_prologue();
  mla_decode_split_mma<2>(pCtx, pMax, pSum, q, cache, blockTable, maxBlocksPerSeq, tokenSeq,
                          tokenPos, tokenList, nullptr, 0, heads, kvLora, ropeDim, blockSize, splits,
                          minChunk, scale);
}

// rm_mla_decode_split_mma over selections (sel [tokens, topK], as rm_indexer_topk writes them):
// decode steps and prefill chunks alike, each query token reading its own list, the 16 heads of a
// token as the M dimension.
RM_KERNEL void __launch_bounds__(kMmaThreads)
    rm_mla_sparse_split_mma(float* pCtx, float* pMax, float* pSum, const float* q,
                            const uint16_t* cache, const int* blockTable, int maxBlocksPerSeq,
                            const int* tokenSeq, const int* tokenPos, const int* tokenList,
                            const int* sel, int topK, int heads, int kvLora, int ropeDim,
                            int blockSize, int splits, int minChunk, float scale) {
  rm_pdl_prologue();
  mla_decode_split_mma<1>(pCtx, pMax, pSum, q, cache, blockTable, maxBlocksPerSeq, tokenSeq,
                          tokenPos, tokenList, sel, topK, heads, kvLora, ropeDim, blockSize, splits,
                          minChunk, scale);
}

// The double-buffered form of rm_mla_sparse_split_mma.
RM_KERNEL void __launch_bounds__(kMmaThreads)
    rm_mla_sparse_split_mma2(float* pCtx, float* pMax, float* pSum, const float* q,
                             const uint16_t* cache, const int* blockTable, int maxBlocksPerSeq,
                             const int* tokenSeq, const int* tokenPos, const int* tokenList,
                             const int* sel, int topK, int heads, int kvLora, int ropeDim,
                             int blockSize, int splits, int minChunk, float scale) {
  rm_pdl_prologue();
  mla_decode_split_mma<2>(pCtx, pMax, pSum, q, cache, blockTable, maxBlocksPerSeq, tokenSeq,
                          tokenPos, tokenList, sel, topK, heads, kvLora, ropeDim, blockSize, splits,
                          minChunk, scale);
}

// out[p, :] = cache row of position p of one sequence, p < ctxLen (bf16, D values per row), so the
// prefill GEMMs read the context as one dense matrix. table = that sequence's block-table row.
// Mapping: grid (ctxLen), threads over 16-byte vectors of the row (D % 8 == 0).
RM_KERNEL void rm_mla_gather_ctx(uint16_t* out, const uint16_t* cache, const int* table, int D,
                                 int blockSize) {
  rm_pdl_prologue();
  const int p = blockIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(
      cache + (static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize) * D);
  uint4* dst = reinterpret_cast<uint4*>(out + static_cast<size_t>(p) * D);
  for (int i = threadIdx.x; i < D / 8; i += blockDim.x) dst[i] = src[i];
}

// Causal softmax of prefill scores: for head h and query i of a tile, row (h, i) of S [H, rows, ld]
// f32 holds the scores against context positions 0..ctxLen-1; query i (position pos[i]) sees
// positions 0..pos[i]. P (same layout, bf16) = softmax(S * scale) over the visible positions, 0
// beyond them, normalised so each row sums to one.
// Mapping: grid (rows, H), 256 threads over the row's positions.
RM_KERNEL void rm_mla_prefill_softmax(uint16_t* P, const float* S, const int* pos, int rows,
                                      int ctxLen, int ld, float scale) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const int i = blockIdx.x, h = blockIdx.y;
  const size_t base = (static_cast<size_t>(h) * rows + i) * ld;
  const int visible = min(pos[i] + 1, ctxLen);
  float m = -INFINITY;
  for (int p = threadIdx.x; p < visible; p += blockDim.x) m = fmaxf(m, S[base + p]);
  m = block_max(m, scratch) * scale;
  float sum = 0.f;
  for (int p = threadIdx.x; p < visible; p += blockDim.x) sum += expf(S[base + p] * scale - m);
  const float inv = 1.f / block_sum(sum, scratch);
  for (int p = threadIdx.x; p < ctxLen; p += blockDim.x) {
    const float v = p < visible ? expf(S[base + p] * scale - m) * inv : 0.f;
    P[base + p] = f32_to_bf16_bits(v);
  }
}
