// Grouped-query attention (Qwen3-MoE) over a paged bf16 KV cache.
//
// Cache of one layer: bf16 [numBlocks, blockSize, 2 * kvHeads * headDim]. A token's row holds the
// rotated keys of its kvHeads heads (headDim values each, head j at j * headDim), then their values
// (head j at (kvHeads + j) * headDim). Addressing is the MLA cache's: the token at position p of a
// sequence lives at row p % blockSize of block blockTable[seq, p / blockSize], i.e. at slot
// block * blockSize + p % blockSize, so the same slots, block table and token lists serve both.
// Queries and outputs are f32 rows [tokens, heads * headDim] (query rows qStride apart); query head
// h reads KV head h / (heads / kvHeads).
#pragma once
#include "common.cuh"

constexpr int kGqaThreads = 128;       // threads of every GQA kernel's block
constexpr int kGqaWarps = kGqaThreads / 32;
constexpr int kGqaTile = 32;           // cache positions per tile of the split kernel
constexpr int kGqaMaxHeadDim = 256;
constexpr int kGqaMaxGroup = 16;       // query heads per KV head
constexpr int kGqaMaxGroupValues = 2048;  // group * headDim: at most 8 output pairs a thread
constexpr int kGqaMaxPairsPerThread = kGqaMaxGroupValues / 2 / kGqaThreads;
constexpr int kGqaRowPad = 8;          // bf16 padding of a staged cache row (keeps 16-byte reads
                                       // of 8 consecutive rows on distinct banks)

// Per-head RMSNorm of queries and keys, rotary embedding of both, and the append of each token's
// keys and values to the cache at slots[t]: for token t and query head h,
//   q[t, h] = rope(qNorm * rmsnorm(q[t, h]), positions[t]) in place; likewise k[t, j] with kNorm,
//   cache[slots[t], j] = bf16(k[t, j]), cache[slots[t], kvHeads + j] = bf16(v[t, j]).
// qNorm / kNorm null: no norm (the rotation alone). Norm: w * (x / sqrt(mean(x^2) + eps)) as
// rm_rmsnorm; rotation: rm_rope's expression and layouts (interleaved != 0: pairs (2i, 2i+1),
// written de-interleaved; 0, Qwen: pairs (i, i + headDim/2)) over the whole head.
// Mapping: grid (tokens, ceil((heads + 2 * kvHeads) / 4)), 4 warps; each warp one head row of the
// token (query heads, then key heads, then value heads). Lane l holds dims l, l + 32, ...; the
// normalised row goes through the warp's shared row so that each lane then rotates its pairs.
RM_KERNEL void rm_gqa_qk_norm_rope_append(float* q, int qStride, float* k, int kStride,
                                          const float* v, int vStride, const float* qNorm,
                                          const float* kNorm, float eps, int heads, int kvHeads,
                                          int headDim, const int* positions, const float* invFreq,
                                          float attnScaling, int interleaved, uint16_t* cache,
                                          const int* slots) {
  rm_pdl_prologue();
  __shared__ float rows[kGqaWarps][kGqaMaxHeadDim];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t = blockIdx.x, job = blockIdx.y * kGqaWarps + warp;
  if (job >= heads + 2 * kvHeads) return;
  const size_t rowWidth = static_cast<size_t>(2) * kvHeads * headDim;
  uint16_t* dst = cache + static_cast<size_t>(slots[t]) * rowWidth;
  if (job >= heads + kvHeads) {  // a value head: copied as it is
    const int j = job - heads - kvHeads;
    const float* src = v + static_cast<size_t>(t) * vStride + static_cast<size_t>(j) * headDim;
    uint16_t* o = dst + static_cast<size_t>(kvHeads + j) * headDim;
    for (int d = lane; d < headDim; d += 32) o[d] = f32_to_bf16_bits(src[d]);
    return;
  }
  const bool isKey = job >= heads;
  const int j = isKey ? job - heads : job;
  float* x = isKey ? k + static_cast<size_t>(t) * kStride + static_cast<size_t>(j) * headDim
                   : q + static_cast<size_t>(t) * qStride + static_cast<size_t>(j) * headDim;
  const float* w = isKey ? kNorm : qNorm;
  float* row = rows[warp];
  float ss = 0.f;
  for (int d = lane; d < headDim; d += 32) {
    const float xv = x[d];
    row[d] = xv;
    ss += xv * xv;
  }
  if (w != nullptr) {
    ss = warp_sum(ss);
    const float inv = 1.f / sqrtf(ss / headDim + eps);
    for (int d = lane; d < headDim; d += 32) row[d] = w[d] * (row[d] * inv);
  }
  __syncwarp();
  const int half = headDim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int i = lane; i < half; i += 32) {
    const float angle = pos * invFreq[i];
    const float c = cosf(angle) * attnScaling, s = sinf(angle) * attnScaling;
    const float x0 = interleaved ? row[2 * i] : row[i];
    const float x1 = interleaved ? row[2 * i + 1] : row[half + i];
    const float r0 = x0 * c - x1 * s, r1 = x1 * c + x0 * s;
    x[i] = r0;
    x[half + i] = r1;
    if (isKey) {
      uint16_t* o = dst + static_cast<size_t>(j) * headDim;
      o[i] = f32_to_bf16_bits(r0);
      o[half + i] = f32_to_bf16_bits(r1);
    }
  }
}

// Shared memory of rm_gqa_decode_split (dynamic; gqa_split_smem_bytes on the host mirrors it):
// the block's queries (scaled) [group][headDim] f32, a tile of keys and of values [kGqaTile]
// [headDim + kGqaRowPad] bf16, the tile's scores / probabilities [group][kGqaTile] f32, and per
// head the rescale factor of the tile and the final softmax sum.
struct GqaSmem {
  float* q;
  uint16_t* k;
  uint16_t* v;
  float* p;
  float* corr;
  float* sum;
  __device__ GqaSmem(char* base, int group, int headDim) {
    const int ld = headDim + kGqaRowPad;
    q = reinterpret_cast<float*>(base);
    k = reinterpret_cast<uint16_t*>(q + group * headDim);
    v = k + kGqaTile * ld;
    p = reinterpret_cast<float*>(v + kGqaTile * ld);
    corr = p + group * kGqaTile;
    sum = corr + group;
  }
};

// Partial attention of one split of the context (flash-decoding), for every query head of one KV
// head. For query token t (sequence tokenSeq[t], attending causally to positions 0 .. tokenPos[t]),
// KV head j and split s: the split covers [s * chunk, min(len, (s + 1) * chunk)) with len =
// tokenPos[t] + 1 and chunk = ceil(len / splits) rounded up to whole tiles (splits past the
// context stay empty). For each query head h of the group: m = max score, l = sum exp(score - m),
// acc = sum exp(score - m) * value, scores = scale * (q . k), all in f32. With splits == 1 the
// block writes out[t, h] = acc / l itself; otherwise pOut[t, h, s] = acc, pMax = m, pSum = l
// (empty splits: -inf, 0, 0) for rm_gqa_combine.
// Mapping: grid (splits, kvHeads, tokens), 128 threads. Per tile of 32 positions: all threads copy
// the tile's key and value rows into shared memory with 16-byte loads (rows past the split are
// zeros); then (query head, position) scores, a thread per pair, or 2 or 4 lanes a pair when the
// group has fewer than 4 heads; then warp w runs the online softmax of heads w, w + 4, ... (a lane
// per position, the running max and sum in registers); then each thread updates its output pairs
// (2 dims of one head) from the tile's values. Every K/V row is read from memory once per group.
RM_KERNEL void rm_gqa_decode_split(float* out, float* pOut, float* pMax, float* pSum,
                                   const float* q, int qStride, const uint16_t* cache,
                                   const int* blockTable, int maxBlocksPerSeq, const int* tokenSeq,
                                   const int* tokenPos, int heads, int kvHeads, int headDim,
                                   int blockSize, int splits, float scale) {
  rm_pdl_prologue();
  extern __shared__ __align__(16) char gqaSmemRaw[];
  const int group = heads / kvHeads;
  GqaSmem sm(gqaSmemRaw, group, headDim);
  const int s = blockIdx.x, j = blockIdx.y, t = blockIdx.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int ld = headDim + kGqaRowPad;
  const int len = tokenPos[t] + 1;
  const int chunk = ((len + splits - 1) / splits + kGqaTile - 1) / kGqaTile * kGqaTile;
  const int begin = min(len, s * chunk), end = min(len, begin + chunk);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const size_t rowWidth = static_cast<size_t>(2) * kvHeads * headDim;
  const uint16_t* kBase = cache + static_cast<size_t>(j) * headDim;
  const uint16_t* vBase = cache + static_cast<size_t>(kvHeads + j) * headDim;
  const int h0 = j * group;

  for (int i = tid; i < group * headDim; i += kGqaThreads) {
    const int g = i / headDim, d = i - g * headDim;
    sm.q[i] = q[static_cast<size_t>(t) * qStride + static_cast<size_t>(h0 + g) * headDim + d] * scale;
  }
  // Each warp keeps the running max and sum of heads warp, warp + 4, ... (same in every lane).
  float m[kGqaMaxGroup / kGqaWarps], l[kGqaMaxGroup / kGqaWarps];
#pragma unroll
  for (int i = 0; i < kGqaMaxGroup / kGqaWarps; i++) {
    m[i] = -INFINITY;
    l[i] = 0.f;
  }
  float acc[kGqaMaxPairsPerThread][2];
#pragma unroll
  for (int i = 0; i < kGqaMaxPairsPerThread; i++) acc[i][0] = acc[i][1] = 0.f;
  const int halfDim = headDim / 2;
  const int outPairs = group * halfDim;
  const int pairs = group * kGqaTile;
  const int lanesPerPair = pairs >= kGqaThreads ? 1 : pairs >= kGqaThreads / 2 ? 2 : 4;
  const int chunks = headDim / 8;  // 16-byte pieces of a row
  const int sub = tid % lanesPerPair;

  for (int p0 = begin; p0 < end; p0 += kGqaTile) {
    for (int i = tid; i < 2 * kGqaTile * chunks; i += kGqaThreads) {
      const int isV = i >= kGqaTile * chunks;
      const int r = (i - isV * kGqaTile * chunks) / chunks;
      const int c = i - isV * kGqaTile * chunks - r * chunks;
      const int p = p0 + r;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);
      if (p < end) {
        const size_t slot = static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize;
        const uint16_t* src = (isV ? vBase : kBase) + slot * rowWidth + 8 * c;
        val = __ldg(reinterpret_cast<const uint4*>(src));
      }
      *reinterpret_cast<uint4*>((isV ? sm.v : sm.k) + r * ld + 8 * c) = val;
    }
    __syncthreads();
    for (int pi = tid / lanesPerPair; pi < pairs; pi += kGqaThreads / lanesPerPair) {
      const int g = pi / kGqaTile, r = pi - g * kGqaTile;
      const float* qr = sm.q + g * headDim;
      const uint16_t* kr = sm.k + r * ld;
      float dot = 0.f;
      for (int c = sub; c < chunks; c += lanesPerPair) {
        float kf[8];
        bf16x8_to_f32(*reinterpret_cast<const uint4*>(kr + 8 * c), kf);
        const float4 qa = *reinterpret_cast<const float4*>(qr + 8 * c);
        const float4 qb = *reinterpret_cast<const float4*>(qr + 8 * c + 4);
        dot += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3];
        dot += qb.x * kf[4] + qb.y * kf[5] + qb.z * kf[6] + qb.w * kf[7];
      }
      if (lanesPerPair > 1) dot += __shfl_xor_sync(0xffffffffu, dot, 1);
      if (lanesPerPair > 2) dot += __shfl_xor_sync(0xffffffffu, dot, 2);
      if (sub == 0) sm.p[pi] = p0 + r < end ? dot : -INFINITY;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kGqaMaxGroup / kGqaWarps; i++) {
      const int g = warp + kGqaWarps * i;
      if (g < group) {
        const float sc = sm.p[g * kGqaTile + lane];
        const float mNew = fmaxf(m[i], warp_max(sc));  // finite: the tile has a valid position
        const float e = expf(sc - mNew);
        const float corr = expf(m[i] - mNew);
        l[i] = l[i] * corr + warp_sum(e);
        m[i] = mNew;
        sm.p[g * kGqaTile + lane] = e;
        if (lane == 0) sm.corr[g] = corr;
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kGqaMaxPairsPerThread; i++) {
      const int o = tid + kGqaThreads * i;
      if (o < outPairs) {
        const int g = o / halfDim, d = 2 * (o - g * halfDim);
        const float* pr = sm.p + g * kGqaTile;
        const float corr = sm.corr[g];
        float a0 = acc[i][0] * corr, a1 = acc[i][1] * corr;
#pragma unroll 8
        for (int r = 0; r < kGqaTile; r++) {
          const uint32_t vv = *reinterpret_cast<const uint32_t*>(sm.v + r * ld + d);
          const float e = pr[r];
          a0 += e * __uint_as_float(vv << 16);
          a1 += e * __uint_as_float(vv & 0xffff0000u);
        }
        acc[i][0] = a0;
        acc[i][1] = a1;
      }
    }
    __syncthreads();  // the next tile overwrites the staged rows and probabilities
  }

  const size_t rowBase = static_cast<size_t>(t) * heads + h0;  // (token, first head of group)
#pragma unroll
  for (int i = 0; i < kGqaMaxGroup / kGqaWarps; i++) {
    const int g = warp + kGqaWarps * i;
    if (g < group && lane == 0) {
      sm.sum[g] = l[i];
      if (splits > 1) {
        const size_t part = (rowBase + g) * splits + s;
        pMax[part] = m[i];
        pSum[part] = l[i];
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kGqaMaxPairsPerThread; i++) {
    const int o = tid + kGqaThreads * i;
    if (o < outPairs) {
      const int g = o / halfDim, d = 2 * (o - g * halfDim);
      float* dst;
      float a0 = acc[i][0], a1 = acc[i][1];
      if (splits == 1) {
        const float inv = 1.f / sm.sum[g];
        a0 *= inv;
        a1 *= inv;
        dst = out + (rowBase + g) * headDim + d;
      } else {
        dst = pOut + ((rowBase + g) * splits + s) * headDim + d;
      }
      *reinterpret_cast<float2*>(dst) = make_float2(a0, a1);
    }
  }
}

// out[t, h] = sum_s w_s * pOut[t, h, s] / sum_s w_s * pSum[t, h, s], w_s = exp(pMax[t, h, s] -
// max_s pMax[t, h, s]) over the non-empty splits (pSum > 0), in ascending split order.
// Mapping: grid (heads, tokens), 128 threads: the split weights first go to shared memory
// (dynamic, splits floats), then each thread sums its dims over the splits.
RM_KERNEL void rm_gqa_combine(float* out, const float* pOut, const float* pMax, const float* pSum,
                              int heads, int headDim, int splits) {
  rm_pdl_prologue();
  extern __shared__ float gqaWeights[];
  __shared__ float scratch[32];
  const int h = blockIdx.x, t = blockIdx.y;
  const size_t base = (static_cast<size_t>(t) * heads + h) * splits;
  float mx = -INFINITY;
  for (int s = threadIdx.x; s < splits; s += blockDim.x) mx = fmaxf(mx, pMax[base + s]);
  mx = block_max(mx, scratch);
  float denom = 0.f;
  for (int s = threadIdx.x; s < splits; s += blockDim.x) {
    const float sum = pSum[base + s];
    const float w = sum > 0.f ? expf(pMax[base + s] - mx) : 0.f;
    gqaWeights[s] = w;
    denom += w * sum;
  }
  denom = block_sum(denom, scratch);  // its barriers also publish the weights
  const float inv = 1.f / denom;
  float* o = out + (static_cast<size_t>(t) * heads + h) * headDim;
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.f;
    for (int s = 0; s < splits; s++) {
      const float w = gqaWeights[s];
      if (w != 0.f) v += w * pOut[(base + s) * headDim + d];
    }
    o[d] = v * inv;
  }
}
