// Routed experts over expert-sorted tokens: each expert's weights are streamed once per group of up
// to 8 of the tokens routed to it, never once per token. Three launches per MoE layer:
//   rm_moe_align    routed (token, slot) pairs grouped by expert, plus the list of active experts;
//   rm_moe_gate_up  h[p] = silu(W_gate[e] x[t]) * (W_up[e] x[t]) for every pair p = t*topK + slot;
//   rm_moe_down     y[p] = weight[p] * W_down[e] h[p];
//   rm_moe_combine  out[t] (+)= sum over slots of y[t*topK + slot], in slot order (deterministic).
// Weights: w13 bf16 [E, 2*inter, hidden] (gate rows then up rows per expert), w2 bf16 [E, hidden, inter].
// Grids are sized from min(pairs, E) active experts, known on the host without reading the routing
// back, so the sequence can be captured in a CUDA graph.
#pragma once
#include "rowdot.cuh"

constexpr int kMoeTokensPerPass = 8;

// offsets[E+1]: pairs of expert e are sortedPairs[offsets[e] .. offsets[e+1]); activeExperts[0 ..
// *activeCount) lists experts with at least one pair, ascending. Pair order within an expert is not
// fixed (atomics) but each pair's result does not depend on it.
// Mapping: a single block; shared counters per expert (dynamic shared memory: 2*E ints), a serial
// scan by thread 0 (E is at most a few hundred), then a scatter.
// The body of rm_moe_align for the calling block; counts: 2 * numExperts ints of shared memory.
__device__ __forceinline__ void align_pairs(int* offsets, int* sortedPairs, int* activeExperts,
                                            int* activeCount, const int* experts, int pairs,
                                            int numExperts, int* counts) {
  int* cursor = counts + numExperts;
  for (int e = threadIdx.x; e < numExperts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  // A negative id is a pair another rank computes (expert parallelism): not sorted, not run.
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    if (experts[p] >= 0) atomicAdd(&counts[experts[p]], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0, active = 0;
    for (int e = 0; e < numExperts; e++) {
      offsets[e] = run;
      cursor[e] = run;
      if (counts[e] > 0) activeExperts[active++] = e;
      run += counts[e];
    }
    offsets[numExperts] = run;
    *activeCount = active;
  }
  __syncthreads();
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    if (experts[p] < 0) continue;
    const int slot = atomicAdd(&cursor[experts[p]], 1);
    sortedPairs[slot] = p;
  }
}

RM_KERNEL void rm_moe_align(int* offsets, int* sortedPairs, int* activeExperts, int* activeCount,
                            const int* experts, int pairs, int numExperts) {
  rm_pdl_prologue();
  extern __shared__ int counts[];
  align_pairs(offsets, sortedPairs, activeExperts, activeCount, experts, pairs, numExperts, counts);
}

constexpr int kAlignWarpOffsetsPerLane = 9;  // align_pairs_warp's offsets a lane writes
// Most experts align_pairs_warp takes (numExperts + 1 offsets over the warp's lanes).
constexpr int kAlignWarpMaxExperts = 32 * kAlignWarpOffsetsPerLane - 1;

// align_pairs for at most 32 pairs by one whole warp (lane p holds pair p), with shuffles and no
// barriers or shared memory: the same offsets, active list and count, and within an expert the
// pairs in ascending order (align_pairs leaves that order to its atomics; no result depends on it).
// experts[0 .. pairs) must be visible to the warp (written by it before a __syncwarp, or earlier).
__device__ __forceinline__ void align_pairs_warp(int* offsets, int* sortedPairs, int* activeExperts,
                                                 int* activeCount, const int* experts, int pairs,
                                                 int numExperts) {
  const int lane = threadIdx.x & 31;
  const int e = lane < pairs ? experts[lane] : -1;  // negative: another rank's pair, not sorted
  const unsigned same = __match_any_sync(0xffffffffu, e);
  const bool valid = e >= 0;
  const bool leader = valid && (same & ((1u << lane) - 1u)) == 0u;  // lowest lane of its expert
  // Pairs and distinct experts below this lane's expert, and below each expert this lane writes
  // the offset of (lane, lane + 32, ...; numExperts + 1 offsets in all).
  int pairsBelow = 0, activeBelow = 0;
  int below[kAlignWarpOffsetsPerLane] = {};
  for (int q = 0; q < 32; q++) {
    const int eq = __shfl_sync(0xffffffffu, e, q);
    const bool lq = __shfl_sync(0xffffffffu, leader, q);
    if (eq < 0) continue;
    if (eq < e) {
      pairsBelow++;
      activeBelow += lq ? 1 : 0;
    }
#pragma unroll
    for (int j = 0; j < kAlignWarpOffsetsPerLane; j++) below[j] += eq < lane + 32 * j ? 1 : 0;
  }
#pragma unroll
  for (int j = 0; j < kAlignWarpOffsetsPerLane; j++) {
    if (lane + 32 * j <= numExperts) offsets[lane + 32 * j] = below[j];
  }
  if (valid) sortedPairs[pairsBelow + __popc(same & ((1u << lane) - 1u))] = lane;
  if (leader) activeExperts[activeBelow] = e;
  const unsigned leaders = __ballot_sync(0xffffffffu, leader);
  if (lane == 0) *activeCount = __popc(leaders);
}

// Gate and up rows of one intermediate index for up to NT pairs: h[p, i] = silu(g) * u.
template <int NT, int UNROLL>
__device__ __forceinline__ void moe_gate_up_pass(float* h, const uint16_t* wg, const uint16_t* wu,
                                                 const float* x, const int* pairs, int nt, int i,
                                                 int hidden, int inter, int topK) {
  const float* xr[NT];
  int pair[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    pair[j] = pairs[j < nt ? j : 0];
    xr[j] = x + static_cast<size_t>(pair[j] / topK) * hidden;
  }
  const uint16_t* const rows[2] = {wg, wu};
  float acc[2][NT];
#pragma unroll
  for (int j = 0; j < NT; j++) acc[0][j] = acc[1][j] = 0.f;
  warp_rows_dot<2, NT, UNROLL>(rows, xr, nt, hidden, acc);
#pragma unroll
  for (int j = 0; j < NT; j++) {
    const float gs = warp_sum(acc[0][j]), us = warp_sum(acc[1][j]);
    if (j < nt && (threadIdx.x & 31) == 0) {
      h[static_cast<size_t>(pair[j]) * inter + i] = (gs / (1.f + expf(-gs))) * us;
    }
  }
}

// h[p, i] = silu(gate_e[i] . x[t]) * (up_e[i] . x[t]) with t = p / topK.
// Mapping: grid (ceil(inter / warps-per-block), min(pairs, E)); blockIdx.y picks the active expert,
// blocks past *activeCount exit; one warp per intermediate row i, streaming that row's gate and up
// weights together for the expert's pairs, at most 8 at a time; the pass is specialised for 1, up to
// 4 and up to 8 pairs so that a lone token keeps 16 loads of 16 bytes in flight per lane.
RM_KERNEL void rm_moe_gate_up(float* h, const uint16_t* w13, const float* x, const int* offsets,
                              const int* sortedPairs, const int* activeExperts,
                              const int* activeCount, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (i >= inter) return;
  const int e = activeExperts[blockIdx.y];
  const uint16_t* wg = w13 + (static_cast<size_t>(e) * 2 * inter + i) * hidden;
  const uint16_t* wu = wg + static_cast<size_t>(inter) * hidden;
  const int begin = offsets[e], end = offsets[e + 1];
  for (int c = begin; c < end; c += kMoeTokensPerPass) {
    const int nt = min(kMoeTokensPerPass, end - c);
    if (nt == 1) {
      moe_gate_up_pass<1, 8>(h, wg, wu, x, sortedPairs + c, nt, i, hidden, inter, topK);
    } else if (nt <= 4) {
      moe_gate_up_pass<4, 4>(h, wg, wu, x, sortedPairs + c, nt, i, hidden, inter, topK);
    } else {
      moe_gate_up_pass<8, 2>(h, wg, wu, x, sortedPairs + c, nt, i, hidden, inter, topK);
    }
  }
}

// R consecutive down-projection rows d0 .. d0 + R - 1 (w[r] is row d0 + r; rows at or past
// `hidden` repeat the last one and are not stored) for up to NT pairs: y[p, d] = weight[p] *
// (w . h[p]).
template <int R, int NT, int UNROLL>
__device__ __forceinline__ void moe_down_pass(float* y, const uint16_t* const (&w)[R],
                                              const float* h, const float* routeWeights,
                                              const int* pairs, int nt, int d0, int hidden,
                                              int inter) {
  const float* hr[NT];
  int pair[NT];
#pragma unroll
  for (int j = 0; j < NT; j++) {
    pair[j] = pairs[j < nt ? j : 0];
    hr[j] = h + static_cast<size_t>(pair[j]) * inter;
  }
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; r++) {
#pragma unroll
    for (int j = 0; j < NT; j++) acc[r][j] = 0.f;
  }
  warp_rows_dot<R, NT, UNROLL>(w, hr, nt, inter, acc);
#pragma unroll
  for (int r = 0; r < R; r++) {
#pragma unroll
    for (int j = 0; j < NT; j++) {
      const float s = warp_sum(acc[r][j]);
      if (j < nt && (R == 1 || d0 + r < hidden) && (threadIdx.x & 31) == 0) {
        y[static_cast<size_t>(pair[j]) * hidden + d0 + r] = routeWeights[pair[j]] * s;
      }
    }
  }
}

// y[p, d] = routeWeights[p] * (down_e[d] . h[p]), R output rows per warp (rm_moe_down: 1).
// Mapping: grid (ceil(hidden / (R * warps-per-block)), min(pairs, E)); one warp per R consecutive
// output dims of the active expert, its pairs at most 8 at a time (specialised like rm_moe_gate_up).
// A pass streams R rows at once: R = 2 keeps twice a single row's loads in flight (16 chunks per
// lane for a lone token, as rm_moe_gate_up's gate and up rows), R = 4 as many as R = 2 with half
// the unroll, to hold the registers. Every output is the same sum as with R = 1 (warp_rows_dot's
// order does not depend on R or UNROLL), so the variants are bit-identical.
template <int R>
__device__ __forceinline__ void moe_down_rows(float* y, const uint16_t* w2, const float* h,
                                              const float* routeWeights, const int* offsets,
                                              const int* sortedPairs, const int* activeExperts,
                                              const int* activeCount, int hidden, int inter) {
  constexpr int kDiv = R == 4 ? 2 : 1;
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int d0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * R;
  if (d0 >= hidden) return;
  const int e = activeExperts[blockIdx.y];
  const uint16_t* w[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int d = R == 1 ? d0 : min(d0 + r, hidden - 1);
    w[r] = w2 + (static_cast<size_t>(e) * hidden + d) * inter;
  }
  const int begin = offsets[e], end = offsets[e + 1];
  for (int c = begin; c < end; c += kMoeTokensPerPass) {
    const int nt = min(kMoeTokensPerPass, end - c);
    if (nt == 1) {
      moe_down_pass<R, 1, 8 / kDiv>(y, w, h, routeWeights, sortedPairs + c, nt, d0, hidden, inter);
    } else if (nt <= 4) {
      moe_down_pass<R, 4, 4 / kDiv>(y, w, h, routeWeights, sortedPairs + c, nt, d0, hidden, inter);
    } else {
      moe_down_pass<R, 8, 2 / kDiv>(y, w, h, routeWeights, sortedPairs + c, nt, d0, hidden, inter);
    }
  }
}

RM_KERNEL void rm_moe_down(float* y, const uint16_t* w2, const float* h, const float* routeWeights,
                           const int* offsets, const int* sortedPairs, const int* activeExperts,
                           const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  moe_down_rows<1>(y, w2, h, routeWeights, offsets, sortedPairs, activeExperts, activeCount, hidden,
                   inter);
}

RM_KERNEL void rm_moe_down_r2(float* y, const uint16_t* w2, const float* h,
                              const float* routeWeights, const int* offsets,
                              const int* sortedPairs, const int* activeExperts,
                              const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  moe_down_rows<2>(y, w2, h, routeWeights, offsets, sortedPairs, activeExperts, activeCount, hidden,
                   inter);
}

RM_KERNEL void rm_moe_down_r4(float* y, const uint16_t* w2, const float* h,
                              const float* routeWeights, const int* offsets,
                              const int* sortedPairs, const int* activeExperts,
                              const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  moe_down_rows<4>(y, w2, h, routeWeights, offsets, sortedPairs, activeExperts, activeCount, hidden,
                   inter);
}

// out[t, d] = (accumulate ? out[t, d] : 0) + sum_{slot < topK} y[t*topK + slot, d].
// Mapping: grid-stride loop, one thread per output element.
RM_KERNEL void rm_moe_combine(float* out, const float* y, int tokens, int hidden, int topK,
                              int accumulate) {
  rm_pdl_prologue();
  const long long total = static_cast<long long>(tokens) * hidden;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long t = e / hidden, d = e % hidden;
    float s = accumulate ? out[e] : 0.f;
    for (int j = 0; j < topK; j++) s += y[(t * topK + j) * hidden + d];
    out[e] = s;
  }
}

// Grouped-GEMM path for long prefills (the caller runs one cuBLAS GEMM per active expert over its
// contiguous rows, reading the expert offsets back on the host):
//   rm_moe_gather_bf16      xs[q] = bf16(x[sortedPairs[q] / topK]), the pairs' inputs in expert order;
//   rm_moe_scatter_weighted y[p] = weight[p] * ys[q] for p = sortedPairs[q], back in pair order for
//                           rm_moe_combine.
// Mapping of both: one block per sorted pair q, threads over the hidden dim.
RM_KERNEL void rm_moe_gather_bf16(uint16_t* xs, const float* x, const int* sortedPairs, int topK,
                                  int hidden) {
  rm_pdl_prologue();
  const int q = blockIdx.x;
  const float* src = x + static_cast<size_t>(sortedPairs[q] / topK) * hidden;
  uint16_t* dst = xs + static_cast<size_t>(q) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = f32_to_bf16_bits(src[i]);
}

RM_KERNEL void rm_moe_scatter_weighted(float* y, const float* ys, const int* sortedPairs,
                                       const float* routeWeights, int hidden) {
  rm_pdl_prologue();
  const int q = blockIdx.x;
  const int p = sortedPairs[q];
  const float w = routeWeights[p];
  const float* src = ys + static_cast<size_t>(q) * hidden;
  float* dst = y + static_cast<size_t>(p) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = w * src[i];
}
