// MLA decode attention for a few tokens in ONE launch: query absorption, flash-decoding over the
// paged latent cache, the combine of the splits and the value projection. At batch 1 the separate
// kernels (rm_mla_absorb_q, the split kernel, rm_mla_combine, rm_mla_out_v) cost ~34 us a layer on
// an H200 although they move only ~4 MB: each pays a launch, a first DRAM latency and a tail
// (docs/cuda-performance.md, v8). Here the eight blocks of a (token, head) form a thread-block
// cluster and exchange their pieces through distributed shared memory instead of global memory
// and further launches:
//   0. optionally (kv given) the step's new cache rows are built here from the kv_a output, as
//      rm_mla_kv_rope_append builds them: a token's own row and those of the step's earlier
//      tokens of its sequence (a verify pass: rows at consecutive positions), each by the block
//      whose split holds its position; a token's own row is written to the cache by head 0's
//      block; each block rotates its head's rotary query;
//   1. block s absorbs latent columns [64 s, 64 s + 64) of the head's query (W_UK^T q_nope); its
//      weight loads are issued before the programmatic-dependent-launch wait, since weights do not
//      depend on the previous kernel; the cluster then gathers the whole absorbed query;
//   2. block s attends over its split of the positions, ceil(len / 8) of them, in tiles of 64:
//      scores (one warp per position, the cache row in 16-byte loads), the tile's max by every
//      warp in shuffles and each position's weight once into shared memory, then the weights
//      times the latent rows (threads over 8-dim chunks, four rows' loads in flight, from L1);
//   3. every block combines the eight splits' (max, sum, context) in split order, exactly as
//      rm_mla_combine does, and projects its vDim / 8 value rows through W_UV.
// Same math as the separate kernels in f32; sums in other orders, so equal within rounding.
#pragma once
#include <cooperative_groups.h>

#include "common.cuh"

constexpr int kMlaFusedSplits = 8;    // blocks per (token, head): the cluster size
constexpr int kMlaFusedThreads = 256;
constexpr int kMlaFusedWarps = kMlaFusedThreads / 32;
constexpr int kMlaFusedLora = 512;    // kvLora: 8 splits x 64 columns, 64 chunks of 8 dims
constexpr int kMlaFusedCols = kMlaFusedLora / kMlaFusedSplits;
constexpr int kMlaFusedMaxRope = 64;  // ropeDim <= 64: at most 8 lanes hold a rotary chunk
constexpr int kMlaFusedMaxNope = 256;
constexpr int kMlaFusedMaxOutRows = 4;  // per warp: vDim <= 8 splits x 8 warps x 4 = 256
constexpr int kMlaFusedTile = 64;       // positions scored per pass
constexpr int kMlaFusedGroups = kMlaFusedThreads / (kMlaFusedLora / 8);  // position groups, pass 2
// Most new rows of one sequence in a step that appends (kv given): MlaFusedDecode.MAX_APPEND_ROWS.
constexpr int kMlaFusedMaxNew = 8;

// kv: null when the cache already holds every position; else the step's kv_a output [T, kvStride]
// (latent then unrotated key) whose normalised, rotated row this kernel appends at slots[t] of
// cacheOut (== cache) with kvNorm, eps, invFreq, attnScaling and interleaved as
// rm_mla_kv_rope_append takes them, q's rotary part then being unrotated. A token finds in the
// cache only the rows of earlier steps: its own row and those of the step's tokens just before it
// of the same sequence at the positions just before its own (tokenSeq equal, tokenPos one less
// each, at most kMlaFusedMaxNew rows in all) are built from kv by the blocks that read them, since
// other blocks of this launch write them. So with kv, every sequence's tokens must be consecutive
// in the step at consecutive positions, at most kMlaFusedMaxNew of them (the host checks).
// out[t, h * vDim + j] = attention output of token t, head h, value dim j (as rm_mla_out_v writes
// it); q: [T, heads, nope + ropeDim], the rotary part already rotated unless kv is given; kvB:
// [heads * (nope + vDim), kvLora] bf16 (W_UK rows then W_UV rows per head); cache, blockTable,
// tokenSeq, tokenPos as for rm_mla_decode_split. Requires kvLora == 512, ropeDim % 8 == 0 and <= 64, nope % 8 == 0 and <=
// 256, vDim % 8 == 0 and <= 256 (MlaFusedDecode.supports).
// Mapping: grid (8, heads, tokens), clusters of 8 along x (block x = its split and cluster rank),
// 256 threads, launch bounds for two blocks an SM (126 registers: with 151, one block an SM, the
// batch-1 step measured 0.2 ms slower).
RM_KERNEL void __cluster_dims__(kMlaFusedSplits, 1, 1) __launch_bounds__(kMlaFusedThreads, 2)
    rm_mla_decode_fused(float* out, const float* q, const uint16_t* kvB, const uint16_t* cache,
                        const int* blockTable, int maxBlocksPerSeq, const int* tokenSeq,
                        const int* tokenPos, int heads, int nope, int ropeDim, int vDim,
                        int blockSize, float scale, const float* kv, int kvStride,
                        const float* kvNorm, float eps, const float* invFreq, float attnScaling,
                        int interleaved, uint16_t* cacheOut, const int* slots) {
  namespace cg = cooperative_groups;
  __shared__ float qNope[kMlaFusedMaxNope];
  __shared__ float absorbPart[kMlaFusedWarps][kMlaFusedCols];
  __shared__ float qLatPart[kMlaFusedCols];  // this block's absorbed columns, read by the cluster
  __shared__ float qs[kMlaFusedLora + kMlaFusedMaxRope];
  __shared__ float sc[kMlaFusedTile];
  __shared__ float pw[kMlaFusedTile];  // the tile's softmax weights exp(score - running max)
  __shared__ float accPart[kMlaFusedGroups][kMlaFusedLora];
  __shared__ float lPart[kMlaFusedGroups];
  __shared__ float ctxPart[kMlaFusedLora];  // this split's unnormalised context, read by the cluster
  __shared__ float mlPart[2];               // this split's max and sum, read by the cluster
  __shared__ float ctx[kMlaFusedLora];
  __shared__ float normScratch[32];
  // The step's new cache rows of this token's sequence in this block's split (normalised latent,
  // rotated key) as bf16, by position - newFirst, when this kernel appends.
  __shared__ __align__(16) uint16_t curRows[kMlaFusedMaxNew][kMlaFusedLora + kMlaFusedMaxRope];

  cg::cluster_group cluster = cg::this_cluster();
  const int s = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int qk = nope + ropeDim, D = kMlaFusedLora + ropeDim;
  const uint16_t* headW = kvB + static_cast<size_t>(h) * (nope + vDim) * kMlaFusedLora;

  // Weights first, before the wait: W_UK rows warp, warp + 8, ... at this lane's two columns, and
  // this warp's W_UV rows at the lane's chunks lane and lane + 32.
  constexpr int kNopeRows = kMlaFusedMaxNope / kMlaFusedWarps;
  uint32_t wk[kNopeRows];
  const int c0 = s * kMlaFusedCols + 2 * lane;
#pragma unroll
  for (int i = 0; i < kNopeRows; i++) {
    const int d = warp + kMlaFusedWarps * i;
    wk[i] = d < nope ? __ldcs(reinterpret_cast<const unsigned*>(headW + static_cast<size_t>(d) * kMlaFusedLora + c0))
                     : 0u;
  }
  const int rowsPer = vDim / kMlaFusedSplits;
  uint4 wv[kMlaFusedMaxOutRows][2];
#pragma unroll
  for (int i = 0; i < kMlaFusedMaxOutRows; i++) {
    const int r = warp + kMlaFusedWarps * i;
    const uint16_t* row = headW + static_cast<size_t>(nope + s * rowsPer + r) * kMlaFusedLora;
    wv[i][0] = r < rowsPer ? load_stream_u4(row + lane * 8) : make_uint4(0u, 0u, 0u, 0u);
    wv[i][1] = r < rowsPer ? load_stream_u4(row + (lane + 32) * 8) : make_uint4(0u, 0u, 0u, 0u);
  }
  rm_pdl_prologue();

  // 1. Absorption of this block's 64 latent columns.
  const float* qr = q + (static_cast<size_t>(t) * heads + h) * qk;
  for (int i = tid; i < nope; i += kMlaFusedThreads) qNope[i] = qr[i];
  const int len = tokenPos[t] + 1;
  const int chunk = (len + kMlaFusedSplits - 1) / kMlaFusedSplits;
  const int begin = min(len, s * chunk), end = min(len, begin + chunk);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  // The split's first cache block, read now so that its latency overlaps the absorption rather
  // than heading the first tile's loads.
  const int firstBlockIdx = begin / blockSize;
  const int firstBlock = begin < end ? table[firstBlockIdx] : 0;
  // With kv (rm_mla_kv_rope_append's work folded in): this block rotates its head's rotary query
  // itself, and builds the step's new rows of the sequence that fall in its split (positions
  // newFirst .. len - 1: the token's own and those of the step's tokens just before it) from kv's
  // latent and key, as rm_mla_kv_rope_append writes them, reading them from shared memory; the
  // block of head 0 holding the token's own row writes it to the cache, where later steps find it.
  const bool appends = kv != nullptr;
  int newFirst = len;  // without kv every position is in the cache
  if (appends) {
    const int seq = tokenSeq[t];
    int d = 0;
    while (d + 1 < kMlaFusedMaxNew && t - d - 1 >= 0 && tokenSeq[t - d - 1] == seq &&
           tokenPos[t - d - 1] == len - 2 - d) {
      d++;
    }
    newFirst = len - 1 - d;
  }
  const int buildFirst = max(begin, newFirst);
  const int builds = max(0, end - buildFirst);
  if (!appends) {
    for (int i = tid; i < ropeDim; i += kMlaFusedThreads) qs[kMlaFusedLora + i] = qr[nope + i];
  } else {
    const int half = ropeDim / 2;
    for (int i = tid; i < half; i += kMlaFusedThreads) {
      const float angle = static_cast<float>(len - 1) * invFreq[i];
      const float c = cosf(angle) * attnScaling, sn = sinf(angle) * attnScaling;
      const float* base = qr + nope;
      const float x0 = interleaved ? base[2 * i] : base[i];
      const float x1 = interleaved ? base[2 * i + 1] : base[half + i];
      qs[kMlaFusedLora + i] = x0 * c - x1 * sn;
      qs[kMlaFusedLora + half + i] = x1 * c + x0 * sn;
    }
#pragma unroll 1
    for (int b = 0; b < builds; b++) {  // uniform over the block: block_sum inside
      const int p = buildFirst + b;
      const float* src = kv + static_cast<size_t>(t - (len - 1 - p)) * kvStride;
      uint16_t* row = curRows[p - newFirst];
      for (int i = tid; i < half; i += kMlaFusedThreads) {
        const float angle = static_cast<float>(p) * invFreq[i];
        const float c = cosf(angle) * attnScaling, sn = sinf(angle) * attnScaling;
        const float* key = src + kMlaFusedLora;
        const float k0 = interleaved ? key[2 * i] : key[i];
        const float k1 = interleaved ? key[2 * i + 1] : key[half + i];
        row[kMlaFusedLora + i] = f32_to_bf16_bits(k0 * c - k1 * sn);
        row[kMlaFusedLora + half + i] = f32_to_bf16_bits(k1 * c + k0 * sn);
      }
      float ss = 0.f;
      for (int k = tid; k < kMlaFusedLora; k += kMlaFusedThreads) ss += src[k] * src[k];
      ss = block_sum(ss, normScratch);
      const float inv = 1.f / sqrtf(ss / kMlaFusedLora + eps);
      for (int k = tid; k < kMlaFusedLora; k += kMlaFusedThreads) {
        row[k] = f32_to_bf16_bits(kvNorm[k] * (src[k] * inv));
      }
    }
    if (builds > 0) {
      __syncthreads();
      if (h == 0 && end == len) {  // this split holds the token's own row
        const uint16_t* own = curRows[len - 1 - newFirst];
        uint16_t* dst = cacheOut + static_cast<size_t>(slots[t]) * D;
        for (int k = tid; k < D; k += kMlaFusedThreads) dst[k] = own[k];
      }
    }
  }
  __syncthreads();
  {
    float a0 = 0.f, a1 = 0.f;
#pragma unroll
    for (int i = 0; i < kNopeRows; i++) {
      const int d = warp + kMlaFusedWarps * i;
      if (d < nope) {
        const float x = qNope[d];
        a0 += x * bf16_bits_to_f32(static_cast<uint16_t>(wk[i] & 0xffffu));
        a1 += x * bf16_bits_to_f32(static_cast<uint16_t>(wk[i] >> 16));
      }
    }
    absorbPart[warp][2 * lane] = a0;
    absorbPart[warp][2 * lane + 1] = a1;
  }
  __syncthreads();
  if (tid < kMlaFusedCols) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kMlaFusedWarps; w++) v += absorbPart[w][tid];
    qLatPart[tid] = v;
  }
  cluster.sync();
  for (int c = tid; c < kMlaFusedLora; c += kMlaFusedThreads) {
    qs[c] = cluster.map_shared_rank(qLatPart, c / kMlaFusedCols)[c % kMlaFusedCols];
  }
  __syncthreads();

  // 2. Attention over this split's positions.
  const int ropeChunks = ropeDim >> 3;
  // This lane's query chunks for scoring: latent chunks lane and lane + 32, rotary chunk lane.
  float qv[3][8];
#pragma unroll
  for (int u = 0; u < 8; u++) {
    qv[0][u] = qs[lane * 8 + u];
    qv[1][u] = qs[(lane + 32) * 8 + u];
    qv[2][u] = lane < ropeChunks ? qs[kMlaFusedLora + lane * 8 + u] : 0.f;
  }
  const int pc = tid & 63, pg = tid >> 6;  // pass 2: latent chunk and position group
  float acc[8] = {};
  float lAcc = 0.f, m = -INFINITY;
  for (int p0 = begin; p0 < end; p0 += kMlaFusedTile) {
    const int n = min(kMlaFusedTile, end - p0);
    // Pass 1: scores, a warp per position, four positions' loads in flight at once.
    for (int i0 = warp; i0 < n; i0 += 4 * kMlaFusedWarps) {
      uint4 kv[4][3];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int i = i0 + u * kMlaFusedWarps;
        const int p = p0 + min(i, n - 1);
        const int b = p / blockSize;
        const uint16_t* row =
            cache +
            (static_cast<size_t>(b == firstBlockIdx ? firstBlock : table[b]) * blockSize +
             p % blockSize) * D;
        kv[u][0] = __ldg(reinterpret_cast<const uint4*>(row + lane * 8));
        kv[u][1] = __ldg(reinterpret_cast<const uint4*>(row + (lane + 32) * 8));
        kv[u][2] = lane < ropeChunks ? __ldg(reinterpret_cast<const uint4*>(row + kMlaFusedLora + lane * 8))
                                     : make_uint4(0u, 0u, 0u, 0u);
        if (p >= newFirst) {
          const uint4* cur = reinterpret_cast<const uint4*>(curRows[p - newFirst]);
          kv[u][0] = cur[lane];
          kv[u][1] = cur[lane + 32];
          kv[u][2] = lane < ropeChunks ? cur[64 + lane] : make_uint4(0u, 0u, 0u, 0u);
        }
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        float dot = 0.f;
#pragma unroll
        for (int part = 0; part < 3; part++) {
          float kf[8];
          bf16x8_to_f32(kv[u][part], kf);
#pragma unroll
          for (int e = 0; e < 8; e++) dot += qv[part][e] * kf[e];
        }
        dot = warp_sum(dot);
        const int i = i0 + u * kMlaFusedWarps;
        if (lane == 0 && i < n) sc[i] = dot * scale;
      }
    }
    __syncthreads();
    // The tile's max by every warp at once (two scores a lane, then shuffles; the max is exact in
    // any order), then each position's weight once, by the first n threads.
    float tileMax = -INFINITY;
    for (int i = lane; i < n; i += 32) tileMax = fmaxf(tileMax, sc[i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, o));
    const float mNew = fmaxf(m, tileMax);
    const float corr = expf(m - mNew);
    m = mNew;
    if (tid < n) pw[tid] = expf(sc[tid] - mNew);
    // Pass 2 (after the barrier that publishes pw): this thread's 8 latent dims over positions
    // pg, pg + 4, ... of the tile, summed in that order, four positions' loads in flight at once.
    lAcc *= corr;
#pragma unroll
    for (int e = 0; e < 8; e++) acc[e] *= corr;
    uint4 raw[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int i = pg + u * kMlaFusedGroups;
      const int p = p0 + min(i, n - 1);
      const int b = p / blockSize;
      const uint16_t* row =
          cache +
          (static_cast<size_t>(b == firstBlockIdx ? firstBlock : table[b]) * blockSize +
           p % blockSize) * D;
      raw[u] = p >= newFirst ? reinterpret_cast<const uint4*>(curRows[p - newFirst])[pc]
                             : __ldg(reinterpret_cast<const uint4*>(row + pc * 8));
    }
    __syncthreads();
    for (int i0 = pg; i0 < n; i0 += 4 * kMlaFusedGroups) {
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int i = i0 + u * kMlaFusedGroups;
        if (i >= n) break;
        float kf[8];
        bf16x8_to_f32(raw[u], kf);
        const float w = pw[i];
        lAcc += w;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[e] += w * kf[e];
      }
      // The next four positions of this thread's group, if any.
      const int next = i0 + 4 * kMlaFusedGroups;
      if (next < n) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
          const int i = next + u * kMlaFusedGroups;
          const int p = p0 + min(i, n - 1);
          const int b = p / blockSize;
          const uint16_t* row =
              cache +
              (static_cast<size_t>(b == firstBlockIdx ? firstBlock : table[b]) * blockSize +
               p % blockSize) * D;
          raw[u] = p >= newFirst ? reinterpret_cast<const uint4*>(curRows[p - newFirst])[pc]
                                 : __ldg(reinterpret_cast<const uint4*>(row + pc * 8));
        }
      }
    }
    __syncthreads();  // sc and pw are rewritten by the next tile
  }
#pragma unroll
  for (int e = 0; e < 8; e++) accPart[pg][pc * 8 + e] = acc[e];
  if (pc == 0) lPart[pg] = lAcc;
  __syncthreads();
  for (int c = tid; c < kMlaFusedLora; c += kMlaFusedThreads) {
    float v = 0.f;
#pragma unroll
    for (int g = 0; g < kMlaFusedGroups; g++) v += accPart[g][c];
    ctxPart[c] = v;
  }
  if (tid == 0) {
    float l = 0.f;
#pragma unroll
    for (int g = 0; g < kMlaFusedGroups; g++) l += lPart[g];
    mlPart[0] = m;  // -inf for an empty split, whose sum and context are 0
    mlPart[1] = l;
  }
  cluster.sync();

  // 3. Combine the splits in split order, as rm_mla_combine does.
  float wgt[kMlaFusedSplits];
  float mMax = -INFINITY;
#pragma unroll
  for (int r = 0; r < kMlaFusedSplits; r++) {
    wgt[r] = cluster.map_shared_rank(mlPart, r)[0];
    mMax = fmaxf(mMax, wgt[r]);
  }
  float denom = 0.f;
#pragma unroll
  for (int r = 0; r < kMlaFusedSplits; r++) {
    const float lr = cluster.map_shared_rank(mlPart, r)[1];
    wgt[r] = wgt[r] == -INFINITY ? 0.f : expf(wgt[r] - mMax);
    denom += wgt[r] * lr;
  }
  for (int c = tid; c < kMlaFusedLora; c += kMlaFusedThreads) {
    float v = 0.f;
#pragma unroll
    for (int r = 0; r < kMlaFusedSplits; r++) {
      if (wgt[r] != 0.f) v += wgt[r] * cluster.map_shared_rank(ctxPart, r)[c];
    }
    ctx[c] = v / denom;
  }
  // This block is done reading its peers' shared memory: arrive now, and wait only before leaving
  // (no block may exit while another still reads it), so the value projection runs meanwhile.
  auto readDone = cluster.barrier_arrive();
  __syncthreads();  // ctx is whole for every thread of the block

  // The value projection of this block's rows of the head.
#pragma unroll
  for (int i = 0; i < kMlaFusedMaxOutRows; i++) {
    const int r = warp + kMlaFusedWarps * i;
    if (r >= rowsPer) break;
    float sum = 0.f;
#pragma unroll
    for (int part = 0; part < 2; part++) {
      float wf[8];
      bf16x8_to_f32(wv[i][part], wf);
      const float* cx = ctx + (lane + 32 * part) * 8;
#pragma unroll
      for (int e = 0; e < 8; e++) sum += wf[e] * cx[e];
    }
    sum = warp_sum(sum);
    if (lane == 0) out[(static_cast<size_t>(t) * heads + h) * vDim + s * rowsPer + r] = sum;
  }
  cluster.barrier_wait(std::move(readDone));
}
