// Next-token choice on the GPU: greedy arg-max (rm_argmax), and rm_sample_rows: logit bias,
// repetition / frequency / presence penalties, an allowed-token bitmask per row, temperature, top-k, top-p, min-p, a counter-based
// Philox4x32-10 draw per (seed, step, round) and logprobs, the steps of the CPU reference
// dev.ringmaster.runtime.sampling.RowSampler in the same order and with the same tie rules.
#pragma once
#include "common.cuh"

// out[r] = index of the largest of logits[r, 0:vocab], lowest index on ties.
// Mapping: one block per row; threads stride over the vocabulary in 16-byte loads, four of them in
// flight per thread (a row of 102,400 logits is 25 steps a thread, against 100 dependent 4-byte
// loads: 29 us at batch 1 on an H200), then a block arg-max. The winner does not depend on the
// order the candidates are compared in (better() is a total order, ties to the lower index).
RM_KERNEL void rm_argmax(int* out, const float* logits, int vocab) {
  rm_pdl_prologue();
  __shared__ float sv[32];
  __shared__ int si[32];
  const float* row = logits + static_cast<size_t>(blockIdx.x) * vocab;
  float v = -INFINITY;
  int idx = -1;
  int tail = 0;
  if ((vocab & 3) == 0 && (reinterpret_cast<uintptr_t>(row) & 15) == 0) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int quads = vocab >> 2;
    constexpr int kInFlight = 4;
    for (int c0 = threadIdx.x; c0 < quads; c0 += kInFlight * blockDim.x) {
      float4 q[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; u++) {
        const int c = c0 + u * blockDim.x;
        q[u] = c < quads ? __ldg(row4 + c) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      }
#pragma unroll
      for (int u = 0; u < kInFlight; u++) {
        const int c = c0 + u * blockDim.x;
        if (c >= quads) break;
        const float e[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
          if (better(e[j], 4 * c + j, v, idx)) {
            v = e[j];
            idx = 4 * c + j;
          }
        }
      }
    }
    tail = vocab;
  }
  for (int i = tail + threadIdx.x; i < vocab; i += blockDim.x) {
    if (better(row[i], i, v, idx)) {
      v = row[i];
      idx = i;
    }
  }
  block_argmax(v, idx, sv, si);
  if (threadIdx.x == 0) out[blockIdx.x] = idx;
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
#pragma unroll
  for (int r = 0; r < 10; r++) {
    const uint32_t hi0 = __umulhi(M0, c.x), lo0 = M0 * c.x;
    const uint32_t hi1 = __umulhi(M1, c.z), lo1 = M1 * c.z;
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += W0;
    k.y += W1;
  }
  return c;
}

// Order-preserving map of a float to an unsigned key (larger float, larger key), and back.
__device__ __forceinline__ uint32_t float_key(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float key_float(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

constexpr int kSampleTile = 128;        // logits per warp step: 4 consecutive per lane
constexpr int kSampleMaxTiles = 2048;   // vocabularies up to 262,144
constexpr int kSampleMaxRounds = 64;    // RowSampler.MAX_ROUNDS

// Lane `lane`'s 4 logits of tile t (index t*128 + 4*lane + j); -inf and valid=false past the end.
// Plain loads, not __ldg: the kernel itself wrote the bias and penalties into the row.
__device__ __forceinline__ void tile_load(const float* row, int vocab, bool vec, int t, int lane,
                                          float (&v)[4], bool (&ok)[4]) {
  const int i0 = t * kSampleTile + 4 * lane;
  if (vec && i0 + 3 < vocab) {
    const float4 q = *reinterpret_cast<const float4*>(row + i0);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
#pragma unroll
    for (int j = 0; j < 4; j++) ok[j] = true;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; j++) {
    ok[j] = i0 + j < vocab;
    v[j] = ok[j] ? row[i0 + j] : -INFINITY;
  }
}

// The key of the k-th largest logit (counting repeats; 1 <= k < vocab): radix select, 8 bits a
// pass from the top, counting into 256 shared buckets with warp-aggregated atomics (lanes of a warp
// that fall in one bucket add once). Every thread returns the key. sel: 2 shared words.
__device__ uint32_t select_kth_key(const float* row, int vocab, bool vec, int tiles, int k,
                                   unsigned* hist, unsigned* sel) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t prefix = 0, mask = 0;
  unsigned need = static_cast<unsigned>(k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    for (int t = warp; t < tiles; t += blockDim.x >> 5) {
      float v[4];
      bool ok[4];
      tile_load(row, vocab, vec, t, lane, v, ok);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const uint32_t key = float_key(v[j]);
        const bool m = ok[j] && (key & mask) == prefix;
        const unsigned bucket = (key >> shift) & 0xffu;
        const unsigned active = __ballot_sync(0xffffffffu, m);
        if (m) {
          const unsigned peers = __match_any_sync(active, bucket);
          if (lane == __ffs(peers) - 1) atomicAdd(&hist[bucket], __popc(peers));
        }
      }
    }
    __syncthreads();
    if (warp == 0) {
      // Lane l holds buckets 255-8l down to 248-8l; scan the lane totals from the top.
      unsigned c[8], sum = 0;
#pragma unroll
      for (int q = 0; q < 8; q++) {
        c[q] = hist[255 - 8 * lane - q];
        sum += c[q];
      }
      unsigned incl = sum;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
      }
      const unsigned excl = incl - sum;
      if (excl < need && incl >= need) {
        unsigned acc = excl;
        for (int q = 0; q < 8; q++) {
          if (acc + c[q] >= need) {
            sel[0] = 255 - 8 * lane - q;
            sel[1] = need - acc;
            break;
          }
          acc += c[q];
        }
      }
    }
    __syncthreads();
    prefix |= sel[0] << shift;
    mask |= 0xffu << shift;
    need = sel[1];
  }
  return prefix;
}

// Block-wide inclusive scan of one float per thread, every thread gets its prefix and the total.
__device__ __forceinline__ float block_inclusive_scan(float v, float* warpSums, float& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  __syncthreads();
  if (lane == 31) warpSums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? warpSums[lane] : 0.f;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float n = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += n;
    }
    warpSums[lane] = w;
  }
  __syncthreads();
  total = warpSums[warps - 1];
  return v + (warp > 0 ? warpSums[warp - 1] : 0.f);
}

// One token per row from logits[r, 0:vocab] (modified in place: bias and penalties are applied to
// the row first), with the row's parameters:
//   temperature (0 = greedy), topK (0 = off), topP (1 = off), minP (0 = off), seeds, steps (the
//   Philox key and counter), repetition (1 = off) / frequency / presence penalties, topLogprobs
//   (-1 none, 0 the chosen token's, n also n alternatives, at most topStride);
//   seen[seenStart[r], seenStart[r+1]): (token, output count) of each distinct token seen in the
//   prompt or output; bias[biasStart[r], biasStart[r+1]): (token, float bits of the bias);
//   maskRow[r]: -1 for a row without a mask (it reads no mask word), else the slot of its
//   allowed-token bitmask masks[slot * maskStride, +ceil(vocab/32)) (bit t % 32 of word t / 32).
// A mask is applied after bias and penalties: every token whose bit is clear gets -inf (written
// into the row), so greedy, the draw and the logprobs see only allowed tokens. A row whose mask
// allows no token writes outTokens[r] = -1 (the host refuses it as the CPU sampler does).
// Writes outTokens[r], and when asked outLogprobs[r] (NaN otherwise) and topStride slots of
// outTopIds / outTopLogprobs (log-softmax after bias, penalties and mask, before temperature).
// Semantics: RowSampler's javadoc. Greedy = argmax, lowest id on ties. Else w = exp((l-max)/T);
// top-k keeps l >= the k-th largest (radix select); min-p keeps w >= minP; top-p by rejection: draw
// by inverse CDF in id order from the candidates, accept when the top-k mass of weights strictly
// above the draw is below topP of the top-k mass, else redraw above it (round r uses Philox counter
// (step, r)); after 64 rejections the argmax.
// Mapping: one block of 1024 threads per row. Every pass walks the row in tiles of 128 logits, a
// warp per tile and 4 consecutive logits per lane (16-byte loads when vocab % 4 == 0). The draw
// keeps one weight sum per tile in shared memory, scans them, and one warp scans the chosen tile.
// No allocation, no host synchronisation: capturable in a CUDA graph whose input buffers the host
// rewrites between replays.
RM_KERNEL void __launch_bounds__(1024) rm_sample_rows(int* outTokens, float* outLogprobs, int* outTopIds,
                              float* outTopLogprobs, int topStride, float* logits, int vocab,
                              const float* temperature, const int* topK, const float* topP,
                              const float* minP, const unsigned long long* seeds,
                              const unsigned long long* steps, const float* repetition,
                              const float* frequency, const float* presence, const int* topLogprobs,
                              const int* seenStart, const int2* seen, const int* biasStart,
                              const int2* bias, const int* maskRow, const uint32_t* masks,
                              int maskStride) {
  rm_pdl_prologue();
  __shared__ float tileSum[kSampleMaxTiles];
  __shared__ float sv[32];
  __shared__ int si[32];
  __shared__ unsigned hist[256];
  __shared__ unsigned sel[2];
  __shared__ int pickTile;
  __shared__ float pickBase;
  __shared__ int pick;
  const int r = blockIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float* row = logits + static_cast<size_t>(r) * vocab;
  const bool vec = (vocab & 3) == 0 && (reinterpret_cast<uintptr_t>(row) & 15) == 0;
  const int tiles = (vocab + kSampleTile - 1) / kSampleTile;

  // Bias first, then penalties; entries name distinct tokens, so no two threads share one.
  for (int e = biasStart[r] + threadIdx.x; e < biasStart[r + 1]; e += blockDim.x) {
    const int2 b = bias[e];
    if (b.x >= 0 && b.x < vocab) row[b.x] += __int_as_float(b.y);
  }
  __syncthreads();
  const float rep = repetition[r], freq = frequency[r], pres = presence[r];
  if (rep != 1.f || freq != 0.f || pres != 0.f) {
    for (int e = seenStart[r] + threadIdx.x; e < seenStart[r + 1]; e += blockDim.x) {
      const int2 s = seen[e];
      if (s.x < 0 || s.x >= vocab) continue;
      float v = row[s.x];
      if (rep != 1.f) v = v > 0.f ? v / rep : v * rep;
      row[s.x] = v - (static_cast<float>(s.y) * freq + (s.y > 0 ? pres : 0.f));
    }
  }
  __syncthreads();

  // The arg-max pass applies the mask on the way: a lane's 4 logits start at a multiple of 4, so
  // their bits lie in one mask word (8 lanes read the same word).
  const int slot = maskRow[r];
  const uint32_t* mask = slot >= 0 ? masks + static_cast<size_t>(slot) * maskStride : nullptr;
  bool allowedHere = false;
  float mv = -INFINITY;
  int mi = -1;
  for (int t = warp; t < tiles; t += warps) {
    float v[4];
    bool ok[4];
    tile_load(row, vocab, vec, t, lane, v, ok);
    const int i0 = t * kSampleTile + 4 * lane;
    if (mask != nullptr && ok[0]) {
      const uint32_t bits = (mask[i0 >> 5] >> (i0 & 31)) & 0xfu;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const bool allowed = ok[j] && ((bits >> j) & 1u);
        allowedHere |= allowed;
        if (!allowed) v[j] = -INFINITY;
      }
      if (bits != 0xfu) {
        if (vec && i0 + 3 < vocab) {
          *reinterpret_cast<float4*>(row + i0) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; j++) {
            if (ok[j]) row[i0 + j] = v[j];
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int i = i0 + j;
      if (ok[j] && better(v[j], i, mv, mi)) {
        mv = v[j];
        mi = i;
      }
    }
  }
  // mask is the same for the whole block, so every thread takes the same branch.
  if (mask != nullptr && !__syncthreads_or(allowedHere)) {
    if (threadIdx.x == 0) {
      outTokens[r] = -1;
      outLogprobs[r] = __int_as_float(0x7fc00000);
    }
    return;
  }
  block_argmax(mv, mi, sv, si);
  const float maxL = mv;
  const int argmax = mi;

  const float temp = temperature[r];
  const int k = topK[r];
  int token = argmax;
  if (!(temp == 0.f || k == 1)) {
    const float invT = 1.f / temp;
    const float kth = k > 0 && k < vocab
                          ? key_float(select_kth_key(row, vocab, vec, tiles, k, hist, sel))
                          : -INFINITY;
    const float p = topP[r], mp = minP[r];
    const unsigned long long seed = seeds[r], step = steps[r];
    auto weight = [&](float v) { return v >= kth ? expf((v - maxL) * invT) : 0.f; };
    float massK = 0.f;
    float pivot = -1.f;  // candidates: weight > pivot and weight >= minP
    const int per = (tiles + blockDim.x - 1) / blockDim.x;
    token = -1;
    for (int round = 0; round < kSampleMaxRounds; round++) {
      float mine = 0.f;
      for (int t = warp; t < tiles; t += warps) {
        float v[4];
        bool ok[4];
        tile_load(row, vocab, vec, t, lane, v, ok);
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const float w = ok[j] ? weight(v[j]) : 0.f;
          if (round == 0) mine += w;
          s += w > pivot && w >= mp ? w : 0.f;
        }
        s = warp_sum(s);
        if (lane == 0) tileSum[t] = s;
      }
      if (round == 0) massK = block_sum(mine, sv);
      __syncthreads();
      // Scan the tile sums: thread i owns tiles [i*per, (i+1)*per).
      float own = 0.f;
      for (int t = threadIdx.x * per; t < min(tiles, (threadIdx.x + 1) * per); t++) own += tileSum[t];
      float total;
      const float incl = block_inclusive_scan(own, sv, total);
      if (!(total > 0.f)) break;
      const uint4 bits = philox4x32_10(
          make_uint4(static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32),
                     static_cast<uint32_t>(round), 0u),
          make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)));
      const float target = static_cast<float>(bits.x >> 8) * (1.f / 16777216.f) * total;
      if (threadIdx.x == 0) pickTile = 0x7fffffff;
      __syncthreads();
      const float before = incl - own;
      int found = -1;
      float foundBase = 0.f;
      if (own > 0.f && incl > target && before <= target) {
        // First tile of this thread's range where the running sum passes the target.
        float acc = before;
        int last = -1;
        for (int t = threadIdx.x * per; t < min(tiles, (threadIdx.x + 1) * per); t++) {
          if (tileSum[t] <= 0.f) continue;
          last = t;
          if (acc + tileSum[t] > target) { found = t; break; }
          acc += tileSum[t];
        }
        if (found < 0) { found = last; acc -= tileSum[last]; }
        foundBase = acc;
        atomicMin(&pickTile, found);  // rounding may let two threads claim: the first wins
      }
      __syncthreads();
      if (found >= 0 && found == pickTile) pickBase = foundBase;  // ranges are disjoint
      __syncthreads();
      if (pickTile == 0x7fffffff) {
        // Rounding left the target past every range: take the last tile with weight.
        if (threadIdx.x == 0) {
          float acc = 0.f;
          int last = 0;
          for (int t = 0; t < tiles; t++) {
            if (tileSum[t] > 0.f) { last = t; }
          }
          for (int t = 0; t < last; t++) acc += tileSum[t];
          pickTile = last;
          pickBase = acc;
        }
        __syncthreads();
      }
      if (warp == 0) {
        const int t = pickTile;
        float v[4];
        bool ok[4];
        tile_load(row, vocab, vec, t, lane, v, ok);
        float w[4], ls = 0.f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const float x = ok[j] ? weight(v[j]) : 0.f;
          w[j] = x > pivot && x >= mp ? x : 0.f;
          ls += w[j];
        }
        float li = ls;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const float n = __shfl_up_sync(0xffffffffu, li, o);
          if (lane >= o) li += n;
        }
        const float base = pickBase;
        const unsigned hit = __ballot_sync(0xffffffffu, ls > 0.f && base + li > target);
        const unsigned any = __ballot_sync(0xffffffffu, ls > 0.f);
        const int L = hit ? __ffs(hit) - 1 : (any ? 31 - __clz(any) : -1);
        if (L < 0 && lane == 0) pick = argmax;
        if (lane == L) {
          float acc = base + li - ls;
          int chosen = -1;
          for (int j = 0; j < 4; j++) {
            if (w[j] <= 0.f) continue;
            chosen = t * kSampleTile + 4 * lane + j;
            if (acc + w[j] > target) break;
            acc += w[j];
          }
          pick = chosen;
        }
      }
      __syncthreads();
      const int x = pick;
      const float wx = weight(row[x]);
      if (p >= 1.f) { token = x; break; }
      float above = 0.f;
      for (int t = warp; t < tiles; t += warps) {
        float v[4];
        bool ok[4];
        tile_load(row, vocab, vec, t, lane, v, ok);
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const float w = ok[j] ? weight(v[j]) : 0.f;
          above += w > wx ? w : 0.f;
        }
      }
      above = block_sum(above, sv);
      if (above < p * massK) { token = x; break; }
      pivot = wx;
      __syncthreads();  // pick and the tile sums are rewritten next round
    }
    if (token < 0) token = argmax;
  }

  const int top = topLogprobs[r];
  if (top >= 0) {
    float s = 0.f;
    for (int t = warp; t < tiles; t += warps) {
      float v[4];
      bool ok[4];
      tile_load(row, vocab, vec, t, lane, v, ok);
#pragma unroll
      for (int j = 0; j < 4; j++) s += ok[j] ? expf(v[j] - maxL) : 0.f;
    }
    const float lse = maxL + logf(block_sum(s, sv));
    if (threadIdx.x == 0) outLogprobs[r] = row[token] - lse;
    // The alternatives, best first: each round the best (value, lowest id) strictly after the
    // previous one in that order.
    float pv = INFINITY;
    int pi = -1;
    const int n = min(min(top, topStride), vocab);
    for (int a = 0; a < n; a++) {
      float bv = -INFINITY;
      int bi = -1;
      for (int t = warp; t < tiles; t += warps) {
        float v[4];
        bool ok[4];
        tile_load(row, vocab, vec, t, lane, v, ok);
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const int i = t * kSampleTile + 4 * lane + j;
          const bool after = v[j] < pv || (v[j] == pv && i > pi);
          if (ok[j] && after && better(v[j], i, bv, bi)) {
            bv = v[j];
            bi = i;
          }
        }
      }
      block_argmax(bv, bi, sv, si);
      if (threadIdx.x == 0) {
        outTopIds[static_cast<size_t>(r) * topStride + a] = bi;
        outTopLogprobs[static_cast<size_t>(r) * topStride + a] = bv - lse;
      }
      pv = bv;
      pi = bi;
    }
  } else if (threadIdx.x == 0) {
    outLogprobs[r] = __int_as_float(0x7fc00000);
  }
  if (threadIdx.x == 0) outTokens[r] = token;
}
