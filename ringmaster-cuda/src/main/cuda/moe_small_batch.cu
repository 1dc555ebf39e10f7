// The MoE layer of a decode step of one or two tokens in three launches instead of six (the model
// runs rm_router_route in every GEMV-sized step; the pair kernels only on request, see
// SmallBatchMoe):
//   rm_router_route       router GEMV, then the routing of every token by the grid's last block,
//                         which can also group the pairs by expert (rm_moe_align's work);
//   rm_moe_gate_up_pairs  h[p] = silu(W_gate[e] x[t]) * (W_up[e] x[t]) straight from the routed
//                         pairs (no grouping by expert: a token's experts are distinct, so a lone
//                         token streams each expert once either way);
//   rm_moe_down_sum       out[t] (+)= sum over slots of weight[p] * W_down[e] h[p], in slot order.
// Each result equals the general path's bit for bit (rm_gemv_bf16 + rm_moe_route; rm_moe_align +
// rm_moe_gate_up + rm_moe_down + rm_moe_combine): the same per-lane sums, warp reductions and
// routing code. Tokens that share an expert stream it once per token here, which is why the host
// takes this path only for the smallest steps.
#pragma once
#include "gemv.cu"
#include "moe_experts.cu"
#include "moe_route.cu"

// logits[t, m] = W[m] . x[t] (bf16 W [E, K]) for `tokens` tokens, then route_token for each token;
// with offsets non-null, then rm_moe_align's grouping of the pairs by expert (same outputs).
// Mapping: as rm_gemv_bf16 (a warp per logit row, tokens in groups of `group`; blocks of
// rm_moe_route's size); every block takes a ticket after its rows are written (threadfence
// first), and the block that takes the last one routes all tokens (the block's threads as
// rm_moe_route's; dynamic shared memory 12 * E bytes), aligns, and resets the counter for the
// next launch. `counter` is one int, zero before the first launch.
// Greedy selections are routed by the block's first warp alone (route_token_warp), which also
// aligns up to 32 pairs (align_pairs_warp): no barrier between the ticket and the end.
// liveTokens (null: all): tokens at or past *liveTokens are a graph bucket's padding rows and
// route to no expert (ids -1, weights 0), so no expert is streamed for them.
RM_KERNEL void rm_router_route(float* logits, int* experts, float* weights, unsigned* counter,
                               const uint16_t* W, const float* x, int K, int tokens,
                               const float* bias, int numExperts, int topK, int scoring,
                               int selection, int numGroups, int topKGroups, int normTopK,
                               float routedScaling, int* offsets, int* sortedPairs,
                               int* activeExperts, int* activeCount, const int* liveTokens,
                               int group) {
  rm_pdl_prologue();
  __shared__ bool last;
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row < numExperts) {
    if (group == 8) {
      gemv_row<8>(logits, W + static_cast<size_t>(row) * K, x, row, numExperts, K, tokens);
    } else {
      gemv_row<4>(logits, W + static_cast<size_t>(row) * K, x, row, numExperts, K, tokens);
    }
  }
  __threadfence();  // this thread's logits are visible device-wide before the block's ticket
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int live = liveTokens != nullptr ? min(tokens, *liveTokens) : tokens;
  for (int p = live * topK + static_cast<int>(threadIdx.x); p < tokens * topK; p += blockDim.x) {
    experts[p] = -1;
    weights[p] = 0.f;
  }
  __syncthreads();  // the padding rows' ids are visible to every thread that routes or aligns
  if (selection == 0 && numExperts <= 32 * kWarpRouteMaxPerLane && topK <= 32) {
    // Greedy routing by the first warp alone: shuffles instead of the block's barriers.
    const bool warpAligns =
        offsets != nullptr && tokens * topK <= 32 && numExperts <= kAlignWarpMaxExperts;
    if (threadIdx.x < 32) {
      for (int t = 0; t < live; t++) {
        route_token_warp(t, experts, weights, logits, bias, numExperts, topK, scoring, normTopK,
                         routedScaling);
      }
      if (warpAligns) {
        // And the grouping by the same warp: its expert ids are visible to it after the sync.
        __syncwarp();
        align_pairs_warp(offsets, sortedPairs, activeExperts, activeCount, experts, tokens * topK,
                         numExperts);
      }
    }
    if (warpAligns) {
      if (threadIdx.x == 0) *counter = 0u;
      return;
    }
  } else {
    for (int t = 0; t < live; t++) {
      route_token(t, experts, weights, logits, bias, numExperts, topK, scoring, selection,
                  numGroups, topKGroups, normTopK, routedScaling);
    }
  }
  if (offsets != nullptr) {
    extern __shared__ int alignCounts[];
    __syncthreads();  // the block's expert ids are visible to its threads after the barrier
    align_pairs(offsets, sortedPairs, activeExperts, activeCount, experts, tokens * topK,
                numExperts, alignCounts);
  }
  if (threadIdx.x == 0) *counter = 0u;
}

// h[p, i] = silu(gate_e[i] . x[t]) * (up_e[i] . x[t]) for pair p = t * topK + slot, e = experts[p]
// (pairs with a negative id belong to another rank: skipped).
// Mapping: grid (ceil(inter / warps-per-block), pairs); a warp per intermediate row of the block's
// pair, as rm_moe_gate_up's single-pair pass.
RM_KERNEL void rm_moe_gate_up_pairs(float* h, const uint16_t* w13, const float* x,
                                    const int* experts, int hidden, int inter, int topK) {
  rm_pdl_prologue();
  const int p = blockIdx.y;
  const int i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int e = experts[p];
  if (i >= inter || e < 0) return;
  const uint16_t* wg = w13 + (static_cast<size_t>(e) * 2 * inter + i) * hidden;
  const uint16_t* wu = wg + static_cast<size_t>(inter) * hidden;
  moe_gate_up_pass<1, 8>(h, wg, wu, x, &p, 1, i, hidden, inter, topK);
}

constexpr int kMoeDownPairsPerGroup = 2;

// out[t, d] = (accumulate ? out[t, d] : 0) + sum over slots j of weight[p] * (down_e[d] . h[p]),
// p = t * topK + j, e = experts[p] (negative: skipped), added in slot order as rm_moe_combine adds
// rm_moe_down's rows (the product rounded before the sum, as there).
// Mapping: grid ceil(hidden / warps-per-block); a warp per output dim d, streaming the rows of two
// slots at a time (16 loads of 16 bytes in flight per lane at inter = 1408).
RM_KERNEL void rm_moe_down_sum(float* out, const uint16_t* w2, const float* h, const int* experts,
                               const float* routeWeights, int tokens, int hidden, int inter,
                               int topK, int accumulate) {
  rm_pdl_prologue();
  const int d = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (d >= hidden) return;
  for (int t = 0; t < tokens; t++) {
    float s = accumulate ? out[static_cast<size_t>(t) * hidden + d] : 0.f;
    for (int j0 = 0; j0 < topK; j0 += kMoeDownPairsPerGroup) {
      const uint16_t* rows[kMoeDownPairsPerGroup];
      const float* hr[kMoeDownPairsPerGroup];
      int ids[kMoeDownPairsPerGroup];
#pragma unroll
      for (int r = 0; r < kMoeDownPairsPerGroup; r++) {
        const int p = t * topK + min(j0 + r, topK - 1);
        ids[r] = j0 + r < topK ? experts[p] : -1;
        rows[r] = ids[r] >= 0 ? w2 + (static_cast<size_t>(ids[r]) * hidden + d) * inter : nullptr;
        hr[r] = h + static_cast<size_t>(p) * inter;
      }
      float acc[kMoeDownPairsPerGroup] = {};
      warp_pairs_dot<kMoeDownPairsPerGroup, 8>(rows, hr, inter, acc);
#pragma unroll
      for (int r = 0; r < kMoeDownPairsPerGroup; r++) {
        const float v = warp_sum(acc[r]);
        if (ids[r] >= 0) s += __fmul_rn(routeWeights[t * topK + j0 + r], v);
      }
    }
    if ((threadIdx.x & 31) == 0) out[static_cast<size_t>(t) * hidden + d] = s;
  }
}
