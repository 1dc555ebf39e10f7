// Custom allreduce over peer memory (one process, peer access enabled between every pair of GPUs).
// Each rank owns a staging buffer and a signal block in its own memory; the kernels read the peers'
// staging buffers and write flags into the peers' signal blocks directly through NVLink or PCIe.
//
// Synchronisation: block b of rank r meets block b of every other rank at a barrier. A flag value
// is the block's epoch + 1 and the epoch lives in device memory, so a captured CUDA graph replays
// with fresh flags and no host argument changes. Each block touches the same elements on every
// rank (same grid-stride mapping), so a per-block barrier orders exactly the data it guards.
// The grid never exceeds RM_AR_MAX_BLOCKS or the SM count (divided among ranks that share a GPU),
// so every block is resident and a spinning block never starves the block its peer waits for.
//
// Sums run in rank order 0..n-1 on every rank, so all ranks get bit-identical results.
#include <stdio.h>
#include "common.cuh"

#define RM_AR_MAX_RANKS 8
#define RM_AR_MAX_BLOCKS 128

struct RmArSignal {
  uint32_t start[RM_AR_MAX_BLOCKS][RM_AR_MAX_RANKS];
  uint32_t mid[RM_AR_MAX_BLOCKS][RM_AR_MAX_RANKS];
  uint32_t end[RM_AR_MAX_BLOCKS][RM_AR_MAX_RANKS];
  uint32_t epoch[RM_AR_MAX_BLOCKS];
};

// The peers' addresses, passed by value (captured into graphs with the launch).
struct RmArPeers {
  float* buf[RM_AR_MAX_RANKS];
  RmArSignal* sig[RM_AR_MAX_RANKS];
};

#define RM_AR_TIMEOUT_NS 30000000000ull

__device__ __forceinline__ uint64_t ar_globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void ar_store_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ar_load_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Block-level barrier with the same block on every rank. `slot` picks start/mid/end so that
// consecutive barriers of one launch never share a flag word. Thread t < n signals rank t and
// waits for rank t's signal; the block's prior writes are made visible system-wide first.
__device__ __forceinline__ void ar_barrier(const RmArPeers& p, int rank, int n, int slot,
                                           uint32_t flag) {
  __syncthreads();
  if (threadIdx.x < n) {
    __threadfence_system();
    const int t = threadIdx.x;
    RmArSignal* peer = p.sig[t];
    RmArSignal* self = p.sig[rank];
    uint32_t* out = slot == 0   ? &peer->start[blockIdx.x][rank]
                    : slot == 1 ? &peer->mid[blockIdx.x][rank]
                                : &peer->end[blockIdx.x][rank];
    const uint32_t* in = slot == 0   ? &self->start[blockIdx.x][t]
                         : slot == 1 ? &self->mid[blockIdx.x][t]
                                     : &self->end[blockIdx.x][t];
    ar_store_release(out, flag);
    // A peer that never arrives (a rank that failed before launching) would hang the GPU; after
    // RM_AR_TIMEOUT_NS the kernel traps instead, so the host sees an error it can report.
    const uint64_t t0 = ar_globaltimer();
    while (ar_load_acquire(in) != flag) {
      if (ar_globaltimer() - t0 > RM_AR_TIMEOUT_NS) {
        printf("rm_ar: rank %d block %d waited %d s for rank %d (slot %d, flag %u); trapping\n",
               rank, blockIdx.x, static_cast<int>(RM_AR_TIMEOUT_NS / 1000000000ull), t, slot, flag);
        __trap();
      }
    }
  }
  __syncthreads();
}

__device__ __forceinline__ uint32_t ar_next_flag(const RmArPeers& p, int rank) {
  return p.sig[rank]->epoch[blockIdx.x] + 1;
}

__device__ __forceinline__ void ar_finish(const RmArPeers& p, int rank, uint32_t flag) {
  if (threadIdx.x == 0) p.sig[rank]->epoch[blockIdx.x] = flag;
}

__device__ __forceinline__ float4 ar_add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Sum of element group i (float4 units) over ranks in order. Every rank's load is issued before
// the first add: a peer load costs about a microsecond over NVLink, and a loop that adds as it
// loads waits that long once per rank (a one-row fused allreduce at 4 ranks took 17 us, not 10).
__device__ __forceinline__ float4 ar_sum4(const RmArPeers& p, int n, size_t i) {
  float4 v[RM_AR_MAX_RANKS];
#pragma unroll
  for (int r = 0; r < RM_AR_MAX_RANKS; r++) {
    if (r < n) v[r] = reinterpret_cast<const float4*>(p.buf[r])[i];
  }
  float4 acc = v[0];
#pragma unroll
  for (int r = 1; r < RM_AR_MAX_RANKS; r++) {
    if (r < n) acc = ar_add4(acc, v[r]);
  }
  return acc;
}

// Writes the valid lanes of group i (elements 4i..4i+3 below count) to out.
__device__ __forceinline__ void ar_store4(float* out, size_t i, size_t count, float4 v) {
  const size_t e = 4 * i;
  if (e + 3 < count && (reinterpret_cast<uintptr_t>(out) & 15) == 0) {
    reinterpret_cast<float4*>(out)[i] = v;
    return;
  }
  const float lanes[4] = {v.x, v.y, v.z, v.w};
  for (int k = 0; k < 4 && e + k < count; k++) out[e + k] = lanes[k];
}

// One-shot: every rank reads all n staging buffers (its input was copied into its own first) and
// writes the full sum to out. Lowest latency; moves (n-1) x the message over each GPU's links.
RM_KERNEL void rm_ar_oneshot(RmArPeers peers, int rank, int n, float* out, long long count) {
  rm_pdl_prologue();
  const uint32_t flag = ar_next_flag(peers, rank);
  ar_barrier(peers, rank, n, 0, flag);
  const size_t groups = (static_cast<size_t>(count) + 3) / 4;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < groups;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    ar_store4(out, i, count, ar_sum4(peers, n, i));
  }
  ar_barrier(peers, rank, n, 2, flag);  // peers are done reading this rank's staging buffer
  ar_finish(peers, rank, flag);
}

// Two-shot: rank r reduces slice r (in float4 groups) of every staging buffer into its own
// staging buffer, then every rank gathers the reduced slices from their owners. Each slice is
// walked with the same grid-stride mapping in both phases, so the per-block barrier suffices.
RM_KERNEL void rm_ar_twoshot(RmArPeers peers, int rank, int n, float* out, long long count) {
  rm_pdl_prologue();
  const uint32_t flag = ar_next_flag(peers, rank);
  ar_barrier(peers, rank, n, 0, flag);
  const size_t groups = (static_cast<size_t>(count) + 3) / 4;
  const size_t per = (groups + n - 1) / n;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * blockDim.x + threadIdx.x;
  {
    const size_t lo = rank * per, hi = min(groups, lo + per);
    for (size_t i = lo + first; i < hi; i += stride) {
      reinterpret_cast<float4*>(peers.buf[rank])[i] = ar_sum4(peers, n, i);
    }
  }
  ar_barrier(peers, rank, n, 1, flag);
  for (int s = 0; s < n; s++) {
    const size_t lo = s * per, hi = min(groups, lo + per);
    const float4* src = reinterpret_cast<const float4*>(peers.buf[s]);
    // __ldcg: bypass L1, which may hold a line of this slice read (unreduced) in phase 1.
    for (size_t i = lo + first; i < hi; i += stride) ar_store4(out, i, count, __ldcg(src + i));
  }
  ar_barrier(peers, rank, n, 2, flag);
  ar_finish(peers, rank, flag);
}

// One-shot allreduce fused with the residual add and RMSNorm that follow a row-parallel layer:
// for each row, v = residual + sum_r x_r; residual = v; out = weight * v / sqrt(mean(v^2) + eps).
// Staging holds the rows [rows, hidden] of x; a block walks rows blockIdx.x, +gridDim.x, ...
RM_KERNEL void rm_ar_fused_add_rmsnorm(RmArPeers peers, int rank, int n, float* out,
                                        float* residual, const float* weight, int rows, int hidden,
                                        float eps) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const uint32_t flag = ar_next_flag(peers, rank);
  ar_barrier(peers, rank, n, 0, flag);
  // float4 rows (the staging buffers are 16-byte aligned): every peer load of a group in flight at
  // once, as in ar_sum4; the scalar loop below serves odd widths and unaligned tensors.
  const bool vec = (hidden & 3) == 0 &&
                   ((reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(residual) |
                     reinterpret_cast<uintptr_t>(weight)) & 15) == 0;
  for (int row = blockIdx.x; vec && row < rows; row += gridDim.x) {
    const int groups = hidden >> 2;
    const size_t base4 = static_cast<size_t>(row) * groups;
    float4* res4 = reinterpret_cast<float4*>(residual);
    float ss = 0.f;
    for (int c = threadIdx.x; c < groups; c += blockDim.x) {
      const float4 s = ar_sum4(peers, n, base4 + c);
      const float4 r = res4[base4 + c];
      const float4 v = make_float4(r.x + s.x, r.y + s.y, r.z + s.z, r.w + s.w);
      res4[base4 + c] = v;
      ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(ss / hidden + eps);
    for (int c = threadIdx.x; c < groups; c += blockDim.x) {
      const float4 v = res4[base4 + c];
      const float4 w = reinterpret_cast<const float4*>(weight)[c];
      reinterpret_cast<float4*>(out)[base4 + c] =
          make_float4(w.x * (v.x * inv), w.y * (v.y * inv), w.z * (v.z * inv), w.w * (v.w * inv));
    }
  }
  for (int row = blockIdx.x; !vec && row < rows; row += gridDim.x) {
    const size_t base = static_cast<size_t>(row) * hidden;
    float ss = 0.f;
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
      float s = peers.buf[0][base + c];
      for (int r = 1; r < n; r++) s += peers.buf[r][base + c];
      const float v = residual[base + c] + s;
      residual[base + c] = v;
      ss += v * v;
    }
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(ss / hidden + eps);
    for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
      out[base + c] = weight[c] * (residual[base + c] * inv);
    }
  }
  ar_barrier(peers, rank, n, 2, flag);
  ar_finish(peers, rank, flag);
}
