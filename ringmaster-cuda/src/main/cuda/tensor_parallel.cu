// Kernels of the tensor/expert-parallel model (one rank per GPU), beside the collectives:
//   rm_embedding_bf16_shard  vocab-parallel embedding: this rank's rows of the table, zeros for ids
//                            another rank owns (the allreduce that follows adds the owner's row);
//   rm_vocab_gather          the allgathered LM-head slices [ranks, rows, vocabShare] laid out as
//                            logits [rows, vocab];
//   rm_moe_localize          expert parallelism without all-to-all: routed expert ids (global) to
//                            this rank's local ids, -1 for experts other ranks own (the align step
//                            skips them), and those pairs' output rows zeroed so the combine adds 0.
#pragma once
#include "common.cuh"

// out[t, :] = f32(table[ids[t] - first, :]) when first <= ids[t] < first + rows, else 0.
// Mapping: one block per token, threads stride over the hidden dim.
RM_KERNEL void rm_embedding_bf16_shard(float* out, const uint16_t* table, const int* ids,
                                       int hidden, int first, int rows) {
  rm_pdl_prologue();
  const int t = blockIdx.x;
  const int row = ids[t] - first;
  float* dst = out + static_cast<size_t>(t) * hidden;
  if (row < 0 || row >= rows) {
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = 0.f;
    return;
  }
  const uint16_t* src = table + static_cast<size_t>(row) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = bf16_bits_to_f32(src[i]);
}

// out[r, k * share + j] = gathered[k, r, j] for k < ranks, r < rows, j < share.
// Mapping: grid-stride loop over the output, one thread per element (coalesced writes).
RM_KERNEL void rm_vocab_gather(float* out, const float* gathered, int rows, int share, int ranks) {
  rm_pdl_prologue();
  const long long vocab = static_cast<long long>(share) * ranks;
  const long long total = vocab * rows;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = e / vocab, c = e % vocab;
    const long long k = c / share, j = c % share;
    out[e] = gathered[(k * rows + r) * share + j];
  }
}

// ids[p] = localOf[ids[p]] (in place; -1 where another rank owns the expert); for those pairs
// y[p, :] = 0. localOf has one entry per routed expert of the model.
// Mapping: one block per (token, slot) pair, threads over the hidden dim for the zeroing.
RM_KERNEL void rm_moe_localize(int* ids, float* y, const int* localOf, int hidden) {
  rm_pdl_prologue();
  const int p = blockIdx.x;
  const int local = localOf[ids[p]];
  __syncthreads();  // every thread has read ids[p] before thread 0 rewrites it
  if (threadIdx.x == 0) ids[p] = local;
  if (local < 0) {
    float* row = y + static_cast<size_t>(p) * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) row[i] = 0.f;
  }
}
