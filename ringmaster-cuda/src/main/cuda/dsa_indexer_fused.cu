// DeepSeek Sparse Attention: the steps between the indexer's projections and its scores in one
// launch (GpuSparseAttention with --kernel-option indexer-fused-ops, the default), the same bits as
// the separate kernels: rm_layernorm of the key, rm_rope of the key's and of every query head's
// first ropeDim values, the key appended to the cache (bf16, as rm_mla_cache_append) or quantized
// into it (FP8, as rm_indexer_fp8_quantize), and, for a scoring FP8 step, the query heads
// quantized in place. Each step runs the separate kernel's device code (idx_layernorm_row with
// the same block size, rope_read_pair / rope_write_pair, idx_fp8_quantize_row).
#pragma once
#include "dsa_indexer_fp8.cu"
#include "rope.cu"

// For token t = blockIdx.x: block y == 0 normalises k[t, 0:dim] (gamma, beta, eps), rotates its
// first ropeDim values and writes it at slots[t] of the key cache: bf16 into keys when keyScales
// is null, else e4m3 codes into keys and the scale into keyScales. Blocks y >= 1 rotate the first
// ropeDim values of headsPerBlock = kIdxNormThreads / (ropeDim / 2) query heads each (q[t, h, :],
// [tokens, heads, dim]) and, when qScales is non-null, quantize those heads in place (their code
// values, scales at qScales[t * heads + h]). k and q are left as the separate kernels leave them.
// Mapping: grid (tokens, 1 + ceil(heads / headsPerBlock)), kIdxNormThreads threads; a rotation
// pair per thread, all of a block's pairs read before a barrier (the de-interleaved write lands on
// other pairs' inputs); a warp per row to quantize. Needs ropeDim even, ropeDim / 2 <= 128.
RM_KERNEL void __launch_bounds__(kIdxNormThreads)
    rm_indexer_qk_fused(float* q, float* k, const float* gamma, const float* beta, float eps,
                        int heads, int dim, int ropeDim, const int* positions,
                        const float* invFreq, float attnScaling, int interleaved, void* keys,
                        float* keyScales, const int* slots, float* qScales) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const int t = blockIdx.x, half = ropeDim / 2;
  const int pos = positions[t];
  float x0 = 0.f, x1 = 0.f, c = 0.f, s = 0.f;
  if (blockIdx.y == 0) {
    float* row = k + static_cast<size_t>(t) * dim;
    idx_layernorm_row(row, gamma, beta, dim, eps, scratch);
    __syncthreads();  // the normalised row is read by other threads
    const bool pair = threadIdx.x < half;
    if (pair) rope_read_pair(row, threadIdx.x, half, interleaved, pos, invFreq, attnScaling, &x0, &x1, &c, &s);
    __syncthreads();
    if (pair) rope_write_pair(row, threadIdx.x, half, x0, x1, c, s);
    __syncthreads();
    const size_t slot = static_cast<size_t>(slots[t]);
    if (keyScales == nullptr) {
      uint16_t* dst = static_cast<uint16_t*>(keys) + slot * dim;
      for (int d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = f32_to_bf16_bits(row[d]);
    } else if (threadIdx.x < 32) {
      idx_fp8_quantize_row(static_cast<uint8_t*>(keys), keyScales, nullptr, row, slot, dim);
    }
    return;
  }
  const int perBlock = blockDim.x / half;
  const int h0 = (blockIdx.y - 1) * perBlock;
  const int hLocal = threadIdx.x / half, i = threadIdx.x - hLocal * half, h = h0 + hLocal;
  const bool pair = hLocal < perBlock && h < heads;
  float* qt = q + static_cast<size_t>(t) * heads * dim;
  float* base = qt + static_cast<size_t>(h) * dim;
  if (pair) rope_read_pair(base, i, half, interleaved, pos, invFreq, attnScaling, &x0, &x1, &c, &s);
  __syncthreads();
  if (pair) rope_write_pair(base, i, half, x0, x1, c, s);
  if (qScales == nullptr) return;
  __syncthreads();  // the rotated heads are read by other warps
  for (int hh = h0 + (threadIdx.x >> 5); hh < min(heads, h0 + perBlock); hh += blockDim.x >> 5) {
    float* qh = qt + static_cast<size_t>(hh) * dim;
    idx_fp8_quantize_row(nullptr, qScales, qh, qh, static_cast<size_t>(t) * heads + hh, dim);
  }
}
