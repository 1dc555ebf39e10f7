// Rotary position embedding, in place, for the two layouts the models use.
#pragma once
#include "common.cuh"

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
  const float angle = static_cast<float>(positions[t]) * invFreq[i];
  const float c = cosf(angle) * attnScaling, s = sinf(angle) * attnScaling;
  const float x0 = interleaved ? base[2 * i] : base[i];
  const float x1 = interleaved ? base[2 * i + 1] : base[half + i];
  __syncthreads();
  base[i] = x0 * c - x1 * s;
  base[half + i] = x1 * c + x0 * s;
}
