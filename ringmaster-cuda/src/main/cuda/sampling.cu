// Next-token choice on the GPU: greedy arg-max, and temperature + top-k + top-p sampling with a
// counter-based Philox4x32-10 generator (the same seed and offset always give the same token).
#pragma once
#include "common.cuh"

constexpr int kSampleThreads = 1024;

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

// Order-preserving map of a float to an unsigned key (larger float, larger key).
__device__ __forceinline__ uint32_t float_key(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Finds, 8 bits at a time from the top, the largest key K such that weight(key >= K) reaches
// `target`, where weight counts 1 per element (count mode) or the element's mass. `keyOf` maps index
// to key (or 0 to exclude), `massOf` index to mass. Every thread returns K.
template <typename KeyFn, typename MassFn>
__device__ uint32_t radix_threshold(int n, float target, KeyFn keyOf, MassFn massOf, float* hist) {
  uint32_t prefix = 0, mask = 0;
  float above = 0.f;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0.f;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const uint32_t k = keyOf(i);
      if (k != 0 && (k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 0xff], massOf(i));
    }
    __syncthreads();
    // Every thread walks the 256 buckets from the top (cheap, and keeps the result uniform).
    uint32_t bucket = 0;
    float acc = above;
    for (int b = 255; b >= 0; b--) {
      const float w = hist[b];
      if (acc + w >= target || b == 0) {
        bucket = static_cast<uint32_t>(b);
        break;
      }
      acc += w;
    }
    above = acc;
    prefix |= bucket << shift;
    mask |= 0xffu << shift;
    __syncthreads();
  }
  return prefix;
}

// One token per row from logits[r, 0:vocab] with temperature[r] > 0, topK[r] (0 = all), topP[r]
// (1 = off), seeds[r] and offsets[r] (e.g. the decode step). Keeps the topK largest logits (ties at
// the k-th value all stay), p_i = exp((l_i - max) / T), then the smallest top set whose mass reaches
// topP of the kept mass (ties at the edge all stay), and draws by inverse CDF in index order with a
// Philox uniform. The distribution matches the CPU sampler's; the token for a given seed does not.
// Mapping: one block of 1024 threads per row; thresholds by radix select over order-preserving keys
// (4 passes of 256-bucket shared histograms), the draw by a block scan over contiguous per-thread
// slices of the vocabulary.
RM_KERNEL void rm_sample(int* out, const float* logits, int vocab, const float* temperature,
                         const int* topK, const float* topP, const unsigned long long* seeds,
                         const unsigned long long* offsets) {
  rm_pdl_prologue();
  __shared__ float hist[256];
  __shared__ float sv[32];
  __shared__ int si[32];
  __shared__ float sliceSum[kSampleThreads];
  __shared__ int chosen;
  const int r = blockIdx.x;
  const float* row = logits + static_cast<size_t>(r) * vocab;
  const float invT = 1.f / temperature[r];

  float mv = -INFINITY;
  int mi = -1;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    if (better(row[i], i, mv, mi)) {
      mv = row[i];
      mi = i;
    }
  }
  block_argmax(mv, mi, sv, si);
  const float maxLogit = mv;

  uint32_t kThresh = 0;
  const int k = topK[r];
  if (k > 0 && k < vocab) {
    kThresh = radix_threshold(
        vocab, static_cast<float>(k), [&](int i) { return float_key(row[i]); },
        [](int) { return 1.f; }, hist);
  }
  auto prob = [&](int i) {
    const float l = row[i];
    return float_key(l) >= kThresh ? expf((l - maxLogit) * invT) : 0.f;
  };
  uint32_t pThresh = 0;
  const float p = topP[r];
  if (p < 1.f) {
    float total = 0.f;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) total += prob(i);
    total = block_sum(total, sv);
    pThresh = radix_threshold(
        vocab, p * total, [&](int i) { const float q = prob(i); return q > 0.f ? float_key(q) : 0u; },
        [&](int i) { return prob(i); }, hist);
  }
  auto kept = [&](int i) {
    const float q = prob(i);
    return q > 0.f && float_key(q) >= pThresh ? q : 0.f;
  };

  const int per = (vocab + blockDim.x - 1) / blockDim.x;
  const int lo = min(vocab, threadIdx.x * per), hi = min(vocab, lo + per);
  float mine = 0.f;
  for (int i = lo; i < hi; i++) mine += kept(i);
  sliceSum[threadIdx.x] = mine;
  if (threadIdx.x == 0) chosen = 0x7fffffff;
  __syncthreads();
  // Inclusive scan of the slice sums (Hillis-Steele over shared memory).
  for (int o = 1; o < blockDim.x; o <<= 1) {
    const float add = threadIdx.x >= o ? sliceSum[threadIdx.x - o] : 0.f;
    __syncthreads();
    sliceSum[threadIdx.x] += add;
    __syncthreads();
  }
  const float total = sliceSum[blockDim.x - 1];
  const unsigned long long seed = seeds[r], off = offsets[r];
  const uint4 bits = philox4x32_10(
      make_uint4(static_cast<uint32_t>(off), static_cast<uint32_t>(off >> 32), 0u, 0u),
      make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)));
  const float u = static_cast<float>(bits.x >> 8) * (1.f / 16777216.f);
  const float target = u * total;
  float acc = sliceSum[threadIdx.x] - mine;
  if (mine > 0.f && target >= acc && target < acc + mine) {
    int pick = -1;
    for (int i = lo; i < hi; i++) {
      const float q = kept(i);
      if (q > 0.f) {
        pick = i;
        if (target < acc + q) break;
        acc += q;
      }
    }
    atomicMin(&chosen, pick);
  }
  __syncthreads();
  if (threadIdx.x == 0) out[r] = chosen != 0x7fffffff ? chosen : mi;
}
