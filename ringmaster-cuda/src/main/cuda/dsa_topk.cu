// DeepSeek Sparse Attention: the multi-block top-k selection of long score rows in three launches
// (rm_indexer_topk_cand), the same bits as rm_indexer_topk / rm_indexer_topk_multi (dsa_indexer.cu):
// the topK highest scores' positions, ties to the earlier position, ascending, -1 past the end.
//
// rm_indexer_topk_multi runs the radix select as four launches of 8-bit histograms over the whole
// row; here one wide histogram (the order keys' top 12 bits) over the row finds the threshold bin,
// and only the positions in that bin (a small share of a long row) are refined to the exact
// topK-th key, by the one block that finishes last:
// - pass 0: every block adds its chunk's 4,096-bin histogram (shared first) to the row's global
//   one; the last block to finish (a ticket taken after a memory fence) finds the bin b holding the
//   topK-th key and how many keys of b are still to be taken (r1);
// - pass 1: every block counts its chunk's keys in bins below b and appends the positions of its
//   keys in bin b to the row's candidate list (warp-aggregated atomics; order irrelevant); the
//   last block radix-selects the r1-th key of the candidates (two 10-bit passes over the low bits)
//   = T, the topK-th key of the row, with how many keys equal to T are taken, and adds each
//   candidate below or equal to T to its chunk's counts. A list that would overflow its capacity
//   (a row whose scores crowd one bin) is not used: the last block then reads the whole row,
//   filtering by the bin, for the same result.
// - pass 2: rm_indexer_topk_multi's ordered write: each block sums the earlier chunks' counts
//   (keys < T, keys == T), which gives its first output slot and how many keys equal to T earlier
//   chunks took, and writes its chunk in position order (idx_write_selected; the _wide kernels:
//   idx_write_selected_wide, four positions a thread and one block-wide scan per 4,096).
// State, zeroed before pass 0 (a memset the graph captures): per row kIdxCandHead + 2 * chunks
// ints (histogram, control words, per-chunk counts), then per row kIdxCandCap ints of candidates
// (never zeroed: only the count is trusted). Chunks as rm_indexer_topk_multi's: ceil(len /
// gridDim.x) positions rounded up to the block size; blocks past a row's context exit.
//
// rm_indexer_topk_cand_half is the same selection with a finer pass-0 bin: the top 12 bits of the
// 16-bit order key of the score rounded to half (sign, 5 exponent and 6 mantissa bits: 64 bins an
// octave, where the f32 key's top 12 bits give 8). A row's scores sit in a narrow range, so the
// coarse bins crowd: pass 0's shared-memory atomics serialise on a few bins, and the threshold
// bin's candidate list grows long (or overflows). Rounding to half is monotone, so the half bin is
// a monotone coarsening of the 32-bit order key and bins below b still hold only keys below every
// key of b; but b's keys no longer share their top bits, so the last block of pass 1 refines them
// on the whole 32-bit key (three radix passes of 11, 11 and 10 bits).
#pragma once
#include <cuda_fp16.h>

#include "dsa_indexer.cu"

constexpr int kIdxCandBits = 12;                       // order-key bits of pass 0's histogram
constexpr int kIdxCandBins = 1 << kIdxCandBits;        // 4,096
constexpr int kIdxCandShift = 32 - kIdxCandBits;       // the low bits left to pass 1: 20
constexpr int kIdxCandCtrl = 8;                        // control words after the histogram
constexpr int kIdxCandHead = kIdxCandBins + kIdxCandCtrl;
constexpr int kIdxCandCap = 16384;                     // candidate positions per row
constexpr int kIdxCandMaxChunks = 64;                  // blocks per row (DsaKernels.TOPK_MAX_CHUNKS)
// Control words: tickets of passes 0 and 1, candidate count, bin b, r1, T, keys == T taken.
enum { kCandTicket0, kCandTicket1, kCandCount, kCandBin, kCandRemaining, kCandKey, kCandTaken };

static_assert(kIdxCandBins == 4 * kIdxTopkThreads, "pass 0's scan gives each thread four bins");
static_assert(2 * 10 == kIdxCandShift, "pass 1 refines the low bits in two 10-bit passes");
static_assert(kIdxTopkThreads == 1024, "the half-bin refinement gives each thread 2 or 1 bins");

// Pass 0's bin of a score (its order key's top 12 bits, or with kHalf the half-rounded score's):
// bin(a) < bin(b) only where key(a) < key(b). The half bin: +0 and -0 alike (as the key), scores
// past the half range in the +-inf bins, NaN (whatever its sign after the key's canonicalising
// add) in the f32 key's own top bits, which lie beyond the +-inf bins on its side.
template <bool kHalf>
__device__ __forceinline__ uint32_t idx_cand_bin(float s) {
  const uint32_t key = idx_desc_key(s);
  if constexpr (!kHalf) {
    return key >> kIdxCandShift;
  } else {
    const float v = s + 0.f;
    const uint32_t h = __half_as_ushort(__float2half_rn(v));
    const uint32_t asc = (h & 0x8000u) ? (~h & 0xffffu) : (h | 0x8000u);
    const uint32_t bin = ((~asc) & 0xffffu) >> 4;
    return v != v ? key >> kIdxCandShift : bin;
  }
}

// Takes the block's ticket of a pass (after a fence over every thread's writes); true in the whole
// block of the last of `blocks` blocks, which may then read what the others wrote (through L2).
__device__ __forceinline__ bool idx_last_block(int* ticket, int blocks) {
  __shared__ bool sLast;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) sLast = atomicAdd(ticket, 1) == blocks - 1;
  __syncthreads();
  if (sLast) __threadfence();
  return sLast;
}

// idx_write_selected with four consecutive positions a thread (4,096 a block step) and one
// block-wide scan a step, of the thread's counts below and equal to `prefix` packed in one int
// (each at most 4,096): the earlier equal keys of a step that are taken are the first
// max(0, remaining - equalSeen) of them, so one scan gives every thread its first slot. The
// same entries in the same slots as idx_write_selected (an eighth of its scans).
__device__ __forceinline__ void idx_write_selected_wide(int* out, const float* row, int begin,
                                                        int end, uint32_t prefix, int remaining,
                                                        int equalSeen, int written, int* scratch) {
  for (int p0 = begin; p0 < end; p0 += 4 * blockDim.x) {
    const int p = p0 + 4 * threadIdx.x;
    uint32_t k[4];
    int less = 0, equal = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      k[j] = p + j < end ? idx_desc_key(row[p + j]) : 0xffffffffu;
      less += p + j < end && k[j] < prefix;
      equal += p + j < end && k[j] == prefix;
    }
    int total;
    const int before = block_exclusive_scan(less | equal << 16, scratch, &total);
    const int lessBefore = before & 0xffff, eqBefore = before >> 16;
    const int open = max(0, remaining - equalSeen);  // equal keys of this step still to be taken
    int slot = written + lessBefore + min(eqBefore, open);
    int eq = eqBefore;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      if (p + j >= end) break;
      if (k[j] < prefix) {
        out[slot++] = p + j;
      } else if (k[j] == prefix) {
        if (eq < open) out[slot++] = p + j;
        eq++;
      }
    }
    written += (total & 0xffff) + min(total >> 16, open);
    equalSeen += total >> 16;
  }
}

template <bool kHalf, bool kWide>
__device__ __forceinline__ void idx_topk_cand(int* sel, int topK, const float* scores,
                                              int ldScores, const int* tokenPos, int rowBase,
                                              int* state, int pass) {
  __shared__ int hist[kIdxCandBins];
  __shared__ int scratch[32];
  __shared__ int sWord[2];
  const int r = blockIdx.y, t = rowBase + r, c = blockIdx.x;
  const int len = tokenPos[t] + 1;
  int* out = sel + static_cast<size_t>(t) * topK;
  int chunk, begin, end;
  if (!topk_row_chunk(out, topK, len, c, pass == 2, &chunk, &begin, &end)) return;
  const int blocks = (len + chunk - 1) / chunk;  // the blocks of this row that take a ticket
  int* head = state + static_cast<size_t>(r) * (kIdxCandHead + 2 * gridDim.x);
  int* ctrl = head + kIdxCandBins;
  int* counts = ctrl + kIdxCandCtrl;  // [chunk] = (keys < T, keys == T)
  int* cand = state + static_cast<size_t>(gridDim.y) * (kIdxCandHead + 2 * gridDim.x) +
              static_cast<size_t>(r) * kIdxCandCap;
  const float* row = scores + static_cast<size_t>(r) * ldScores;

  if (pass == 0) {
    for (int i = threadIdx.x; i < kIdxCandBins; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int p = begin + threadIdx.x; p < end; p += blockDim.x) {
      atomicAdd(&hist[idx_cand_bin<kHalf>(row[p])], 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kIdxCandBins; i += blockDim.x) {
      if (hist[i] != 0) atomicAdd(&head[i], hist[i]);
    }
    if (!idx_last_block(&ctrl[kCandTicket0], blocks)) return;
    // The bin of the topK-th smallest key: thread i scans bins 4i .. 4i+3 after the earlier ones.
    int bins[4], own = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      bins[j] = __ldcg(&head[4 * threadIdx.x + j]);
      own += bins[j];
    }
    int total;
    int cum = block_exclusive_scan(own, scratch, &total);
    if (cum < topK && cum + own >= topK) {
      int j = 0;
      while (cum + bins[j] < topK) cum += bins[j++];
      ctrl[kCandBin] = 4 * threadIdx.x + j;
      ctrl[kCandRemaining] = topK - cum;
    }
    return;
  }

  if (pass == 1) {
    const uint32_t bin = static_cast<uint32_t>(ctrl[kCandBin]);
    const int lane = threadIdx.x & 31;
    int less = 0;
    for (int p0 = begin; p0 < end; p0 += blockDim.x) {  // the same trip count in every lane
      const int p = p0 + threadIdx.x;
      const uint32_t b = p < end ? idx_cand_bin<kHalf>(row[p]) : 0xffffffffu;
      less += b < bin;
      const unsigned hit = __ballot_sync(0xffffffffu, b == bin);
      if (hit != 0) {
        int base = 0;
        if (lane == 0) base = atomicAdd(&ctrl[kCandCount], __popc(hit));
        base = __shfl_sync(0xffffffffu, base, 0) + __popc(hit & ((1u << lane) - 1));
        if (b == bin && base < kIdxCandCap) cand[base] = p;
      }
    }
    int lessAll;
    block_exclusive_scan(less, scratch, &lessAll);
    if (threadIdx.x == 0) counts[2 * c] = lessAll;
    if (!idx_last_block(&ctrl[kCandTicket1], blocks)) return;
    // The r1-th smallest key among those of bin b: radix passes over bits 19-10 and 9-0 (with
    // kHalf over the whole key: bits 31-21, 20-10, 9-0), one bin a thread (two for 11 bits),
    // reading the candidate list (or, had it overflowed, the whole row through the bin).
    const int listed = __ldcg(&ctrl[kCandCount]);
    const bool fromList = listed <= kIdxCandCap;
    const int n = fromList ? listed : len;
    uint32_t prefix, mask;
    int remaining = ctrl[kCandRemaining];
    if constexpr (!kHalf) {
      prefix = bin << kIdxCandShift;
      mask = 0xffffffffu << kIdxCandShift;
      for (int shift = 10; shift >= 0; shift -= 10) {
        hist[threadIdx.x] = 0;
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
          const uint32_t k = idx_desc_key(row[fromList ? __ldcg(&cand[i]) : i]);
          if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 1023u], 1);
        }
        __syncthreads();
        const int own = hist[threadIdx.x];
        int total;
        const int cum = block_exclusive_scan(own, scratch, &total);
        if (cum < remaining && cum + own >= remaining) {
          sWord[0] = static_cast<int>(prefix | (static_cast<uint32_t>(threadIdx.x) << shift));
          sWord[1] = remaining - cum;
        }
        __syncthreads();
        prefix = static_cast<uint32_t>(sWord[0]);
        remaining = sWord[1];
        mask |= 1023u << shift;
      }
    } else {
      prefix = 0;
      mask = 0;
#pragma unroll 1
      for (int step = 0; step < 3; step++) {
        const int bits = step < 2 ? 11 : 10;
        const int shift = step == 0 ? 21 : step == 1 ? 10 : 0;
        const uint32_t low = (1u << bits) - 1;
        const int per = (1 << bits) / kIdxTopkThreads;  // this thread's bins: per * tid ..
        for (int i = threadIdx.x; i < (1 << bits); i += blockDim.x) hist[i] = 0;
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
          const float v = row[fromList ? __ldcg(&cand[i]) : i];
          if (!fromList && idx_cand_bin<kHalf>(v) != bin) continue;
          const uint32_t k = idx_desc_key(v);
          if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & low], 1);
        }
        __syncthreads();
        int own = 0;
        for (int j = 0; j < per; j++) own += hist[per * threadIdx.x + j];
        int total;
        int cum = block_exclusive_scan(own, scratch, &total);
        if (cum < remaining && cum + own >= remaining) {
          int j = per * threadIdx.x;
          while (cum + hist[j] < remaining) cum += hist[j++];
          sWord[0] = static_cast<int>(prefix | (static_cast<uint32_t>(j) << shift));
          sWord[1] = remaining - cum;
        }
        __syncthreads();
        prefix = static_cast<uint32_t>(sWord[0]);
        remaining = sWord[1];
        mask |= low << shift;
      }
    }
    // prefix = T; `remaining` of the keys equal to T are taken. Each bin-b key below or equal to
    // T counts in its chunk (hist reused: [0, chunks) below, [64, 64 + chunks) equal).
    for (int i = threadIdx.x; i < 2 * kIdxCandMaxChunks; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int p = fromList ? __ldcg(&cand[i]) : i;
      const float v = row[p];
      const uint32_t k = idx_desc_key(v);
      if ((kHalf ? idx_cand_bin<kHalf>(v) : k >> kIdxCandShift) != bin) continue;
      if (k < prefix) atomicAdd(&hist[p / chunk], 1);
      if (k == prefix) atomicAdd(&hist[kIdxCandMaxChunks + p / chunk], 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) {
      counts[2 * i] = __ldcg(&counts[2 * i]) + hist[i];
      counts[2 * i + 1] = hist[kIdxCandMaxChunks + i];
    }
    if (threadIdx.x == 0) {
      ctrl[kCandKey] = static_cast<int>(prefix);
      ctrl[kCandTaken] = remaining;
    }
    return;
  }

  const uint32_t key = static_cast<uint32_t>(ctrl[kCandKey]);
  const int taken = ctrl[kCandTaken];
  int lessBefore = 0, equalBefore = 0;
  for (int i = threadIdx.x; i < c; i += blockDim.x) {
    lessBefore += counts[2 * i];
    equalBefore += counts[2 * i + 1];
  }
  int sum;
  block_exclusive_scan(lessBefore, scratch, &sum);
  lessBefore = sum;
  block_exclusive_scan(equalBefore, scratch, &sum);
  equalBefore = sum;
  if constexpr (kWide) {
    idx_write_selected_wide(out, row, begin, end, key, taken, equalBefore,
                            lessBefore + min(equalBefore, taken), scratch);
  } else {
    idx_write_selected(out, row, begin, end, key, taken, equalBefore,
                       lessBefore + min(equalBefore, taken), scratch);
  }
}

RM_KERNEL void __launch_bounds__(kIdxTopkThreads)
    rm_indexer_topk_cand(int* sel, int topK, const float* scores, int ldScores,
                         const int* tokenPos, int rowBase, int* state, int pass) {
  rm_pdl_prologue();
  idx_topk_cand<false, false>(sel, topK, scores, ldScores, tokenPos, rowBase, state, pass);
}

// rm_indexer_topk_cand with pass 0 binning the half-rounded scores (the same selections).
RM_KERNEL void __launch_bounds__(kIdxTopkThreads)
    rm_indexer_topk_cand_half(int* sel, int topK, const float* scores, int ldScores,
                              const int* tokenPos, int rowBase, int* state, int pass) {
  rm_pdl_prologue();
  idx_topk_cand<true, false>(sel, topK, scores, ldScores, tokenPos, rowBase, state, pass);
}

// rm_indexer_topk_cand and rm_indexer_topk_cand_half with the ordered write of
// idx_write_selected_wide (the same selections).
RM_KERNEL void __launch_bounds__(kIdxTopkThreads)
    rm_indexer_topk_cand_wide(int* sel, int topK, const float* scores, int ldScores,
                              const int* tokenPos, int rowBase, int* state, int pass) {
  rm_pdl_prologue();
  idx_topk_cand<false, true>(sel, topK, scores, ldScores, tokenPos, rowBase, state, pass);
}

RM_KERNEL void __launch_bounds__(kIdxTopkThreads)
    rm_indexer_topk_cand_half_wide(int* sel, int topK, const float* scores, int ldScores,
                                   const int* tokenPos, int rowBase, int* state, int pass) {
  rm_pdl_prologue();
  idx_topk_cand<true, true>(sel, topK, scores, ldScores, tokenPos, rowBase, state, pass);
}
