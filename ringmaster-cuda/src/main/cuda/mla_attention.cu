// Multi-head latent attention (DeepSeek-V2/V3) in the absorbed form over a paged latent cache.
//
// Cache: bf16 [numBlocks, blockSize, D] with D = kvLora + ropeDim: each token's normalised KV latent
// followed by its rotated shared rotary key. A sequence's tokens live in the blocks its row of the
// block table names (blockTable[seq, pos / blockSize]), at row pos % blockSize.
// A query row is [kvLora latent query | ropeDim rotated rotary query] per head (f32, D values), made
// by rm_mla_absorb_q from the projected q; after attention rm_mla_out_v maps the latent context back
// through W_UV. Decode and prefill use the same split kernel: every query token attends causally to
// positions 0 .. tokenPos[t] of its sequence, which the cache already holds.
#pragma once
#include "common.cuh"
#include "rowdot.cuh"

constexpr int kMlaMaxPerLane = 20;  // D <= 640 (DeepSeek: 512 + 64 = 576)
constexpr int kMlaWarps = 8;

constexpr int kMlaProjTokens = 8;     // tokens per block of the absorb / out-projection kernels
constexpr int kMlaAbsorbCols = 128;   // latent columns per absorb block (16 threads x 8 columns)
constexpr int kMlaAbsorbRowGroups = 16;  // 256 threads = 16 row groups x 16 column threads
constexpr int kMlaOutRowsPerWarp = 4;

// qOut[t, h, 0:kvLora] = sum_d q[t, h, d] * kvB[h*(nope+vDim) + d, :] (W_UK^T q_nope);
// qOut[t, h, kvLora:kvLora+ropeDim] = q[t, h, nope:nope+ropeDim]. q is [T, H, nope+ropeDim].
// Mapping: grid (heads, ceil(kvLora / 128), ceil(T / 8)), 256 threads. Thread (g, i), g = tid / 16,
// i = tid % 16, owns columns c0 + 8i .. c0 + 8i + 7 and rows d = g, g + 16, ...: every W_UK row
// slice is one coalesced 256-byte read of 16-byte loads, all of a thread's rows in flight at once
// (the old mapping walked the 128 rows one dependent load at a time). Each weight is read once for
// the block's 8 tokens (q_nope staged in shared memory); the 16 row groups are summed through shared
// memory in a fixed order, so results do not depend on scheduling.
RM_KERNEL void rm_mla_absorb_q(float* qOut, const float* q, const uint16_t* kvB, int heads, int nope,
                               int ropeDim, int vDim, int kvLora, int tokens) {
  rm_pdl_prologue();
  __shared__ float qn[kMlaProjTokens][256];
  __shared__ float red[kMlaAbsorbRowGroups][kMlaAbsorbCols + 4];
  const int h = blockIdx.x, t0 = blockIdx.z * kMlaProjTokens;
  const int nt = min(kMlaProjTokens, tokens - t0);
  const int g = threadIdx.x >> 4, i = threadIdx.x & 15;
  for (int k = threadIdx.x; k < nt * nope; k += blockDim.x) {
    const int j = k / nope, d = k - j * nope;
    qn[j][d] = q[(static_cast<size_t>(t0 + j) * heads + h) * (nope + ropeDim) + d];
  }
  if (blockIdx.y == 0) {
    for (int k = threadIdx.x; k < nt * ropeDim; k += blockDim.x) {
      const int j = k / ropeDim, r = k - j * ropeDim;
      const size_t row = static_cast<size_t>(t0 + j) * heads + h;
      qOut[row * (kvLora + ropeDim) + kvLora + r] = q[row * (nope + ropeDim) + nope + r];
    }
  }
  __syncthreads();
  const int c = blockIdx.y * kMlaAbsorbCols + 8 * i;
  const bool vec = (kvLora & 7) == 0;
  const uint16_t* wk = kvB + static_cast<size_t>(h) * (nope + vDim) * kvLora;
  float acc[kMlaProjTokens][8];
#pragma unroll
  for (int j = 0; j < kMlaProjTokens; j++) {
#pragma unroll
    for (int k = 0; k < 8; k++) acc[j][k] = 0.f;
  }
  if (c < kvLora) {
#pragma unroll 8
    for (int d = g; d < nope; d += kMlaAbsorbRowGroups) {
      const uint16_t* wr = wk + static_cast<size_t>(d) * kvLora + c;
      float wf[8];
      if (vec) {
        bf16x8_to_f32(load_stream_u4(wr), wf);
      } else {
#pragma unroll
        for (int k = 0; k < 8; k++) wf[k] = c + k < kvLora ? bf16_bits_to_f32(wr[k]) : 0.f;
      }
#pragma unroll
      for (int j = 0; j < kMlaProjTokens; j++) {
        if (j < nt) {
          const float x = qn[j][d];
#pragma unroll
          for (int k = 0; k < 8; k++) acc[j][k] += x * wf[k];
        }
      }
    }
  }
  for (int j = 0; j < nt; j++) {
#pragma unroll
    for (int k = 0; k < 8; k++) red[g][8 * i + k] = acc[j][k];
    __syncthreads();
    if (threadIdx.x < kMlaAbsorbCols) {
      const int cc = blockIdx.y * kMlaAbsorbCols + threadIdx.x;
      float v = 0.f;
#pragma unroll
      for (int r = 0; r < kMlaAbsorbRowGroups; r++) v += red[r][threadIdx.x];
      if (cc < kvLora) qOut[(static_cast<size_t>(t0 + j) * heads + h) * (kvLora + ropeDim) + cc] = v;
    }
    __syncthreads();
  }
}

// out[t, h, j] = sum_c ctx[t, h, c] * kvB[h*(nope+vDim) + nope + j, c] (W_UV ctx).
// Mapping: grid (heads, ceil(vDim / 32), ceil(T / 8)), 8 warps, each warp 4 value rows of the head
// for the block's (up to) 8 tokens: warp_rows_dot streams the rows with 16-byte loads, 8 in flight
// per lane at kvLora = 512, and reuses each weight for every token.
RM_KERNEL void rm_mla_out_v(float* out, const float* ctx, const uint16_t* kvB, int heads, int nope,
                            int vDim, int kvLora, int tokens) {
  rm_pdl_prologue();
  const int h = blockIdx.x, t0 = blockIdx.z * kMlaProjTokens;
  const int nt = min(kMlaProjTokens, tokens - t0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int j0 = (blockIdx.y * (blockDim.x >> 5) + warp) * kMlaOutRowsPerWarp;
  if (j0 >= vDim) return;
  const uint16_t* rows[kMlaOutRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kMlaOutRowsPerWarp; r++) {
    const int j = min(j0 + r, vDim - 1);  // rows past vDim repeat the last one, never stored
    rows[r] = kvB + (static_cast<size_t>(h) * (nope + vDim) + nope + j) * kvLora;
  }
  const float* xr[kMlaProjTokens];
#pragma unroll
  for (int k = 0; k < kMlaProjTokens; k++) {
    xr[k] = ctx + (static_cast<size_t>(t0 + min(k, nt - 1)) * heads + h) * kvLora;
  }
  float acc[kMlaOutRowsPerWarp][kMlaProjTokens] = {};
  warp_rows_dot<kMlaOutRowsPerWarp, kMlaProjTokens, 2>(rows, xr, nt, kvLora, acc);
#pragma unroll
  for (int r = 0; r < kMlaOutRowsPerWarp; r++) {
#pragma unroll
    for (int k = 0; k < kMlaProjTokens; k++) {
      const float v = warp_sum(acc[r][k]);
      if (lane == 0 && k < nt && j0 + r < vDim) {
        out[(static_cast<size_t>(t0 + k) * heads + h) * vDim + j0 + r] = v;
      }
    }
  }
}

// cache[slots[t]] = bf16(kv[t, 0:D]) for each new token t (kv rows have stride kvStride: the
// normalised latent then the rotated rotary key, as the kv_a projection leaves them).
// Mapping: one block per token, threads over the D values.
RM_KERNEL void rm_mla_cache_append(uint16_t* cache, const float* kv, int kvStride, const int* slots,
                                   int D) {
  rm_pdl_prologue();
  const int t = blockIdx.x;
  uint16_t* dst = cache + static_cast<size_t>(slots[t]) * D;
  const float* src = kv + static_cast<size_t>(t) * kvStride;
  for (int i = threadIdx.x; i < D; i += blockDim.x) dst[i] = f32_to_bf16_bits(src[i]);
}

// Partial attention of one split of the KV length (flash-decoding). For query token t, head h and
// split s covering positions [s*chunk, min((s+1)*chunk, len)) with len = tokenPos[t] + 1 and
// chunk = ceil(len / splits): pMax = max score, pSum = sum exp(score - pMax), pCtx = sum exp(score -
// pMax) * latent (kvLora values). Scores are (q . k) * scale over all D dims. Empty splits write
// pMax = -inf, pSum = 0, pCtx = 0.
// Mapping: grid (ceil(heads / 8), splits, tokens), 8 warps per block, one warp per head; the warps of
// a block walk the same positions, so each cache row comes from DRAM once and from L1 for the other
// heads. Lane l holds dims l, l+32, ... of the query and of its context accumulator; each position
// costs one warp reduction and an online-softmax update.
RM_KERNEL void rm_mla_decode_split(float* pCtx, float* pMax, float* pSum, const float* q,
                                   const uint16_t* cache, const int* blockTable,
                                   int maxBlocksPerSeq, const int* tokenSeq, const int* tokenPos,
                                   int heads, int kvLora, int ropeDim, int blockSize, int splits,
                                   float scale) {
  rm_pdl_prologue();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int h = blockIdx.x * kMlaWarps + warp, s = blockIdx.y, t = blockIdx.z;
  if (h >= heads) return;
  const int D = kvLora + ropeDim;
  const int len = tokenPos[t] + 1;
  const int chunk = (len + splits - 1) / splits;
  const int begin = s * chunk, end = min(len, begin + chunk);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const float* qr = q + (static_cast<size_t>(t) * heads + h) * D;

  float qv[kMlaMaxPerLane], acc[kMlaMaxPerLane];
#pragma unroll
  for (int j = 0; j < kMlaMaxPerLane; j++) {
    const int d = lane + 32 * j;
    qv[j] = d < D ? qr[d] : 0.f;
    acc[j] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  // Two positions per step: their loads and warp reductions are independent, which halves the
  // latency chain a lone warp walks through.
  for (int p = begin; p < end; p += 2) {
    const bool two = p + 1 < end;
    const uint16_t* kr0 =
        cache + (static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize) * D;
    const int p1 = two ? p + 1 : p;
    const uint16_t* kr1 =
        cache + (static_cast<size_t>(table[p1 / blockSize]) * blockSize + p1 % blockSize) * D;
    float k0[kMlaMaxPerLane], k1[kMlaMaxPerLane];
    float dot0 = 0.f, dot1 = 0.f;
#pragma unroll
    for (int j = 0; j < kMlaMaxPerLane; j++) {
      const int d = lane + 32 * j;
      k0[j] = d < D ? bf16_bits_to_f32(kr0[d]) : 0.f;
      k1[j] = d < D ? bf16_bits_to_f32(kr1[d]) : 0.f;
      dot0 += qv[j] * k0[j];
      dot1 += qv[j] * k1[j];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      dot0 += __shfl_xor_sync(0xffffffffu, dot0, o);
      dot1 += __shfl_xor_sync(0xffffffffu, dot1, o);
    }
    const float s0 = dot0 * scale;
    const float s1 = two ? dot1 * scale : -INFINITY;
    const float mNew = fmaxf(m, fmaxf(s0, s1));
    const float corr = expf(m - mNew);
    const float e0 = expf(s0 - mNew);
    const float e1 = two ? expf(s1 - mNew) : 0.f;
    l = l * corr + e0 + e1;
#pragma unroll
    for (int j = 0; j < kMlaMaxPerLane; j++) {
      if (lane + 32 * j < kvLora) acc[j] = acc[j] * corr + e0 * k0[j] + e1 * k1[j];
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
  for (int j = 0; j < kMlaMaxPerLane; j++) {
    const int d = lane + 32 * j;
    if (d < kvLora) pc[d] = acc[j];
  }
}

// ctx[t, h, :] = sum_s w_s * pCtx[s] / sum_s w_s * pSum[s], w_s = exp(pMax[s] - max_s pMax[s]),
// summed over the non-empty splits in ascending order, for tokens t = tokenList[y] (or y when
// tokenList is null).
// Mapping: grid (heads, tokens, column parts); the threads first read the split maxima and sums in
// parallel and list the non-empty splits with their weights in shared memory (2 x splits x 4
// bytes, dynamic), then each thread sums its latent dims of the block's part over that list, its
// loads independent of each other (a chain of per-split loads through every thread made this
// kernel latency-bound). The parts spread a token's head over several SMs: at batch 1, one block
// per head left 16 SMs reading every split's row (9.5 us at a 512-token context).
RM_KERNEL void rm_mla_combine(float* ctx, const float* pCtx, const float* pMax, const float* pSum,
                              const int* tokenList, int heads, int kvLora, int splits) {
  rm_pdl_prologue();
  extern __shared__ float combineSmem[];
  __shared__ float scratch[32];
  __shared__ int listed;
  float* weight = combineSmem;
  int* list = reinterpret_cast<int*>(combineSmem + splits);
  const int h = blockIdx.x, t = tokenList != nullptr ? tokenList[blockIdx.y] : blockIdx.y;
  const size_t base = (static_cast<size_t>(t) * heads + h) * splits;
  float m = -INFINITY;
  for (int s = threadIdx.x; s < splits; s += blockDim.x) m = fmaxf(m, pMax[base + s]);
  m = block_max(m, scratch);
  float denom = 0.f;
  for (int s = threadIdx.x; s < splits; s += blockDim.x) {
    const float sum = pSum[base + s];
    const float w = sum > 0.f ? expf(pMax[base + s] - m) : 0.f;
    weight[s] = w;
    denom += w * sum;
  }
  denom = block_sum(denom, scratch);  // its barriers also publish weight[]
  if (threadIdx.x < 32) {  // warp 0 lists the non-empty splits, in order
    int n = 0;
    for (int s0 = 0; s0 < splits; s0 += 32) {
      const int s = s0 + threadIdx.x;
      const bool used = s < splits && weight[s] != 0.f;
      const unsigned mask = __ballot_sync(0xffffffffu, used);
      if (used) list[n + __popc(mask & ((1u << threadIdx.x) - 1u))] = s;
      n += __popc(mask);
    }
    if (threadIdx.x == 0) listed = n;
  }
  __syncthreads();
  const int n = listed;
  const float inv = 1.f / denom;
  float* o = ctx + (static_cast<size_t>(t) * heads + h) * kvLora;
  const int part = (kvLora + gridDim.z - 1) / gridDim.z;
  const int cEnd = min(kvLora, static_cast<int>(blockIdx.z + 1) * part);
  for (int c = blockIdx.z * part + threadIdx.x; c < cEnd; c += blockDim.x) {
    float v = 0.f;
#pragma unroll 8
    for (int i = 0; i < n; i++) {
      const int s = list[i];
      v += weight[s] * pCtx[(base + s) * kvLora + c];
    }
    o[c] = v * inv;
  }
}

// The steps between MLA's projections and its attention, fused for a token: RMSNorm of the KV latent
// kv[t, 0:kvLora] (weight kvNorm), rotary embedding of the shared key kv[t, kvLora:kvLora+ropeDim]
// and of every head's rotary query q[t, h*qk + nope ...], then the latent and key appended to the
// paged cache as bf16 at slots[t]. kv and q are updated in place as the separate kernels
// (rm_rmsnorm, rm_rope, rm_mla_cache_append) leave them; the rotation is rm_rope's expression.
// Mapping: grid (tokens, rotary-pair blocks); each block takes whole heads' rotation pairs, one per
// thread (the key counts as head -1), reads them all before a barrier and then writes (the
// de-interleaved write of a pair lands on another pair's input); block y == 0 also normalises the
// latent with strided loads (it touches no rotary value).
RM_KERNEL void rm_mla_kv_rope_append(float* kv, int kvStride, const float* kvNorm, float eps,
                                     int kvLora, int ropeDim, float* q, int qStride, int heads,
                                     int qk, int nope, const int* positions, const float* invFreq,
                                     float attnScaling, int interleaved, uint16_t* cache,
                                     const int* slots) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const int t = blockIdx.x, half = ropeDim / 2, D = kvLora + ropeDim;
  float* row = kv + static_cast<size_t>(t) * kvStride;
  uint16_t* dst = cache + static_cast<size_t>(slots[t]) * D;
  const int headsPerBlock = blockDim.x / half;
  const int hLocal = threadIdx.x / half, i = threadIdx.x - hLocal * half;
  const int h = blockIdx.y * headsPerBlock + hLocal - 1;  // -1: the shared rotary key
  float* base = nullptr;
  if (hLocal < headsPerBlock && h < heads) {
    base = h < 0 ? row + kvLora : q + static_cast<size_t>(t) * qStride + static_cast<size_t>(h) * qk + nope;
  }
  float x0 = 0.f, x1 = 0.f, c = 0.f, s = 0.f;
  if (base != nullptr) {
    const float angle = static_cast<float>(positions[t]) * invFreq[i];
    c = cosf(angle) * attnScaling;
    s = sinf(angle) * attnScaling;
    x0 = interleaved ? base[2 * i] : base[i];
    x1 = interleaved ? base[2 * i + 1] : base[half + i];
  }
  if (blockIdx.y == 0) {
    float ss = 0.f;
    for (int k = threadIdx.x; k < kvLora; k += blockDim.x) {
      const float v = row[k];
      ss += v * v;
    }
    ss = block_sum(ss, scratch);  // also the barrier between the rotary reads and writes
    const float inv = 1.f / sqrtf(ss / kvLora + eps);
    for (int k = threadIdx.x; k < kvLora; k += blockDim.x) {
      const float v = kvNorm[k] * (row[k] * inv);
      row[k] = v;
      dst[k] = f32_to_bf16_bits(v);
    }
  } else {
    __syncthreads();
  }
  if (base != nullptr) {
    const float r0 = x0 * c - x1 * s, r1 = x1 * c + x0 * s;
    base[i] = r0;
    base[half + i] = r1;
    if (h < 0) {
      dst[kvLora + i] = f32_to_bf16_bits(r0);
      dst[kvLora + half + i] = f32_to_bf16_bits(r1);
    }
  }
}
