// Rotary position embedding, in place, for the two layouts the models use.
#pragma once
#include "common.cuh"

// Pair i of a rotation of 2 * half values at base for position pos: its two inputs (pairs (2i,
// 2i+1) when interleaved, else (i, i + half)) and the cosine and sine scaled by attnScaling. The
// kernels that rotate (rm_rope, the DSA indexer's fused key kernel) share these two helpers, so
// their results are the same bits.
__device__ __forceinline__ void rope_read_pair(const float* base, int i, int half, int interleaved,
                                               int pos, const float* invFreq, float attnScaling,
                                               float* x0, float* x1, float* c, float* s) {
  const float angle = static_cast<float>(pos) * invFreq[i];
  *c = cosf(angle) * attnScaling;
  *s = sinf(angle) * attnScaling;
  *x0 = interleaved ? base[2 * i] : base[i];
  *x1 = interleaved ? base[2 * i + 1] : base[half + i];
}

// Writes pair i rotated, de-interleaved: base[i] and base[half + i]. Every pair of the rotation
// must have been read first (the de-interleaved write lands on other pairs' inputs). Each product
// rounded before the sum (no FMA contraction, as the CPU reference computes it): the compiler
// would otherwise contract the expression differently in each kernel that inlines it.
__device__ __forceinline__ void rope_write_pair(float* base, int i, int half, float x0, float x1,
                                                float c, float s) {
  base[i] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  base[half + i] = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
}

// Rotates `dim` values at x[t*tokenStride + h*headStride + offset ...] for position positions[t].
// invFreq[dim/2] and attnScaling (YaRN's factor, 1 otherwise) come from the host's rope table.
// interleaved != 0 (DeepSeek): pairs are (2i, 2i+1) and the result is written de-interleaved, first
// the rotated even dims then the odd ones, as transformers does for V2/V3; interleaved == 0 (Qwen):
// pairs are (i, i + dim/2).
// Mapping: grid (tokens, heads), one thread per rotation pair (blockDim.x == dim/2); all reads
// happen before a barrier, so the de-interleaving write cannot clobber a neighbour's input.
RM_KERNEL void rm_rope(float* x, int tokenStride, int headStride, int offset, const int* positions,
                       const float* invFreq, int dim, float attnScaling, int interleaved) {
  rm_pdl_prologue();
  const int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x, half = dim / 2;
  float* base = x + static_cast<size_t>(t) * tokenStride + static_cast<size_t>(h) * headStride + offset;
  float x0, x1, c, s;
  rope_read_pair(base, i, half, interleaved, positions[t], invFreq, attnScaling, &x0, &x1, &c, &s);
  __syncthreads();
  rope_write_pair(base, i, half, x0, x1, c, s);
}
