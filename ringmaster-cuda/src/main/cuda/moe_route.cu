// MoE routing on the GPU, the same function as dev.ringmaster.model.arch.Router.
#pragma once
#include "common.cuh"

constexpr int kMaxTopK = 64;

// For each token: scores = softmax(logits) (scoring 0) or sigmoid(logits) (scoring 1);
// choice = scores + bias (bias may be null); selection 1 (group_limited_greedy) keeps the topKGroups
// groups with the best single choice and sets the rest to 0, selection 2 (noaux_tc) ranks groups by
// the sum of their two best choices and sets the rest to -inf; then topK greedy picks (ties to the
// lower expert id). Weights are the picked choices, or for noaux_tc the unbiased scores; normTopK
// renormalises them (sigmoid adds 1e-20 to the denominator) and routedScaling multiplies them.
//
// The routing of token t by the calling block (the body of rm_moe_route, also run by the last block of
// rm_router_route). Logits are read with __ldcg: in the fused kernel other blocks wrote them during
// this launch, and L2, not this SM's L1, is where their writes are visible.
__device__ __forceinline__ void route_token(int t, int* experts, float* weights,
                                            const float* logits, const float* bias,
                                            int numExperts, int topK, int scoring, int selection,
                                            int numGroups, int topKGroups, int normTopK,
                                            float routedScaling) {
  extern __shared__ float smem[];
  float* scores = smem;
  float* choice = smem + numExperts;
  int* taken = reinterpret_cast<int*>(smem + 2 * numExperts);
  __shared__ float sv[32];
  __shared__ int si[32];
  __shared__ float groupScore[64];
  __shared__ int keepGroup[64];
  __shared__ float picked[kMaxTopK];
  const int E = numExperts;
  const float* row = logits + static_cast<size_t>(t) * E;

  if (scoring == 0) {
    float m = -INFINITY;
    for (int i = threadIdx.x; i < E; i += blockDim.x) m = fmaxf(m, __ldcg(row + i));
    m = block_max(m, sv);
    float s = 0.f;
    for (int i = threadIdx.x; i < E; i += blockDim.x) {
      const float e = expf(__ldcg(row + i) - m);
      scores[i] = e;
      s += e;
    }
    s = block_sum(s, sv);
    const float inv = 1.f / s;
    for (int i = threadIdx.x; i < E; i += blockDim.x) scores[i] *= inv;
  } else {
    for (int i = threadIdx.x; i < E; i += blockDim.x) scores[i] = 1.f / (1.f + expf(-__ldcg(row + i)));
  }
  for (int i = threadIdx.x; i < E; i += blockDim.x) {
    choice[i] = bias != nullptr ? scores[i] + bias[i] : scores[i];
    taken[i] = 0;
  }
  __syncthreads();

  if (selection != 0) {
    const int per = E / numGroups;
    for (int g = threadIdx.x; g < numGroups; g += blockDim.x) {
      float best = -INFINITY, second = -INFINITY;
      for (int i = g * per; i < (g + 1) * per; i++) {
        const float v = choice[i];
        if (v > best) {
          second = best;
          best = v;
        } else if (v > second) {
          second = v;
        }
      }
      groupScore[g] = selection == 2 ? best + (per > 1 ? second : 0.f) : best;
      keepGroup[g] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int j = 0; j < topKGroups; j++) {
        int bestG = -1;
        for (int g = 0; g < numGroups; g++) {
          if (!keepGroup[g] && (bestG < 0 || groupScore[g] > groupScore[bestG])) bestG = g;
        }
        keepGroup[bestG] = 1;
      }
    }
    __syncthreads();
    const float fill = selection == 2 ? -INFINITY : 0.f;
    for (int i = threadIdx.x; i < E; i += blockDim.x) {
      if (!keepGroup[i / per]) choice[i] = fill;
    }
    __syncthreads();
  }

  float sum = 0.f;
  for (int j = 0; j < topK; j++) {
    float v = -INFINITY;
    int idx = -1;
    for (int i = threadIdx.x; i < E; i += blockDim.x) {
      if (!taken[i] && better(choice[i], i, v, idx)) {
        v = choice[i];
        idx = i;
      }
    }
    block_argmax(v, idx, sv, si);
    const float w = selection == 2 ? scores[idx] : choice[idx];
    if (threadIdx.x == 0) {
      taken[idx] = 1;
      experts[t * topK + j] = idx;
    }
    picked[j] = w;  // every thread holds the same picks; kept on chip, not read back from memory
    sum += w;
    __syncthreads();
  }
  const float denom = normTopK ? (scoring == 1 ? sum + 1e-20f : sum) : 1.f;
  for (int j = threadIdx.x; j < topK; j += blockDim.x) {
    float w = picked[j];
    if (normTopK) w /= denom;
    weights[t * topK + j] = w * routedScaling;
  }
  __syncthreads();  // the next token's routing reuses the shared arrays
}

constexpr int kWarpRouteMaxPerLane = 8;  // experts per lane: E <= 256

// route_token for greedy selection (selection 0) and E <= 256, by ONE warp with shuffles only: lane
// l holds experts l, l + 32, ... in registers. No barriers, where the block version pays two per
// reduction and one per pick. Bit-identical to route_token run by rm_moe_route's block of
// routingThreads(E) = 32 * ceil(E / 32) threads, one expert a thread: maxima and arg-maxima do not
// depend on order (arg-max ties go to the lower id); the softmax sum is each 32-expert group's
// warp sum, then those partial sums combined as block_sum's final xor butterfly combines them (an
// xor butterfly leaves the same sum in every lane, IEEE addition being commutative).
__device__ __forceinline__ void route_token_warp(int t, int* experts, float* weights,
                                                 const float* logits, const float* bias,
                                                 int numExperts, int topK, int scoring,
                                                 int normTopK, float routedScaling) {
  const int lane = threadIdx.x & 31;
  const int E = numExperts;
  const float* row = logits + static_cast<size_t>(t) * E;
  float sc[kWarpRouteMaxPerLane], ch[kWarpRouteMaxPerLane];
  unsigned taken = 0u;  // bit j: expert lane + 32 j picked
  if (scoring == 0) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kWarpRouteMaxPerLane; j++) {
      const int i = lane + 32 * j;
      sc[j] = i < E ? __ldcg(row + i) : -INFINITY;
      m = fmaxf(m, sc[j]);
    }
    m = warp_max(m);
    float part[kWarpRouteMaxPerLane];
#pragma unroll
    for (int j = 0; j < kWarpRouteMaxPerLane; j++) {
      const int i = lane + 32 * j;
      sc[j] = i < E ? expf(sc[j] - m) : 0.f;
      part[j] = warp_sum(sc[j]);  // 0 for groups past E, as block_sum's absent warps
    }
    // block_sum's last step over the partial sums at lanes 0-7 (zeros above): xor steps 16 and 8
    // add zeros; then 4, 2, 1.
    const float s = ((part[0] + part[4]) + (part[2] + part[6])) +
                    ((part[1] + part[5]) + (part[3] + part[7]));
    const float inv = 1.f / s;
#pragma unroll
    for (int j = 0; j < kWarpRouteMaxPerLane; j++) sc[j] *= inv;
  } else {
#pragma unroll
    for (int j = 0; j < kWarpRouteMaxPerLane; j++) {
      const int i = lane + 32 * j;
      sc[j] = i < E ? 1.f / (1.f + expf(-__ldcg(row + i))) : 0.f;
    }
  }
#pragma unroll
  for (int j = 0; j < kWarpRouteMaxPerLane; j++) {
    const int i = lane + 32 * j;
    ch[j] = bias != nullptr && i < E ? sc[j] + bias[i] : sc[j];
  }
  float sum = 0.f, mine = 0.f;  // lane j keeps pick j's weight
  for (int k = 0; k < topK; k++) {
    float v = -INFINITY;
    int idx = -1;
#pragma unroll
    for (int j = 0; j < kWarpRouteMaxPerLane; j++) {
      const int i = lane + 32 * j;
      if (i < E && !((taken >> j) & 1u) && better(ch[j], i, v, idx)) {
        v = ch[j];
        idx = i;
      }
    }
    warp_argmax(v, idx);
    if ((idx & 31) == lane) taken |= 1u << (idx >> 5);
    if (lane == 0) experts[t * topK + k] = idx;
    if (lane == k) mine = v;  // greedy: the weight is the picked choice
    sum += v;
  }
  const float denom = normTopK ? (scoring == 1 ? sum + 1e-20f : sum) : 1.f;
  if (lane < topK) {
    float w = mine;
    if (normTopK) w /= denom;
    weights[t * topK + lane] = w * routedScaling;
  }
}

// Mapping: one block per token (blockDim.x a multiple of 32, experts in dynamic shared memory as
// scores[E] then choice[E] then taken[E]); group scores by one thread per group, group choice by
// thread 0 (groups are few), each of the topK picks by a block arg-max.
// liveTokens (null: all): a token at or past *liveTokens is a padding row of a graph bucket and
// routes to no expert (ids -1, weights 0), so its experts' weights are not read.
RM_KERNEL void rm_moe_route(int* experts, float* weights, const float* logits, const float* bias,
                            int numExperts, int topK, int scoring, int selection, int numGroups,
                            int topKGroups, int normTopK, float routedScaling,
                            const int* liveTokens) {
  rm_pdl_prologue();
  if (liveTokens != nullptr && static_cast<int>(blockIdx.x) >= *liveTokens) {
    for (int j = threadIdx.x; j < topK; j += blockDim.x) {
      experts[blockIdx.x * topK + j] = -1;
      weights[blockIdx.x * topK + j] = 0.f;
    }
    return;
  }
  route_token(blockIdx.x, experts, weights, logits, bias, numExperts, topK, scoring, selection,
              numGroups, topKGroups, normTopK, routedScaling);
}
