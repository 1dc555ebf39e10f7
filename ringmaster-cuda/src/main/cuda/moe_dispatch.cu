// Expert parallelism with all-to-all dispatch (--moe-a2a-backend all-to-all), one rank per GPU.
// Rank r of W routes the slice of the step's n tokens [t0, t0 + mine), t0 = r * per, per =
// ceil(n / W) (the CPU's MoeMlp split). Every peer gets a fixed block of `per` rows from every rank,
// one per slice token whatever the routing, so the message sizes depend on n alone and a decode
// step with its two all-to-alls can be captured in a CUDA graph; which rows mean anything travels
// in the rows themselves. A dispatch row is
//     [hidden floats of x | topK expert ids (int bits, -1: not for this peer) | topK weights]
// and a row without any id is padding (its x is not written). The owner runs its experts over all
// W * per received rows as W * per tokens of topK slots (the -1 slots skipped), so its per-pair
// output rows [W * per * topK, hidden] are already in return order: block s of `per * topK` rows
// goes back to rank s, and pair (i, j) of rank r's slice comes back at row i * topK + j of the
// block from the owner of its expert.
//   rm_a2a_pack     send[p][i] for every peer p and slice token i;
//   rm_a2a_unpack   received rows to the expert kernels' inputs: x rows, local ids, weights;
//   rm_a2a_combine  out[i] = shared[i] + sum over slots j in slot order of the returned pair rows
//                   (the single-GPU order of rm_moe_combine, so one rank computes the same bits).
#pragma once
#include "common.cuh"

// send [W, per, hidden + 2 * topK]; ids/weights: the routing of all n tokens [n, topK] (global
// expert ids); owner[e]: the rank owning expert e.
// Mapping: grid (per, W), one block per (slice token i, peer p); threads over the slots, then over
// the hidden dim for the payload.
RM_KERNEL void rm_a2a_pack(float* send, const float* x, const int* ids, const float* weights,
                           const int* owner, int t0, int mine, int per, int hidden, int topK) {
  rm_pdl_prologue();
  __shared__ int any;
  const int i = blockIdx.x, p = blockIdx.y;
  const int rowFloats = hidden + 2 * topK;
  float* row = send + (static_cast<size_t>(p) * per + i) * rowFloats;
  if (threadIdx.x == 0) any = 0;
  __syncthreads();
  for (int j = threadIdx.x; j < topK; j += blockDim.x) {
    int id = -1;
    float w = 0.f;
    if (i < mine) {
      const size_t slot = static_cast<size_t>(t0 + i) * topK + j;
      const int e = ids[slot];
      if (owner[e] == p) {
        id = e;
        w = weights[slot];
      }
    }
    row[hidden + j] = __int_as_float(id);
    row[hidden + topK + j] = w;
    if (id >= 0) any = 1;  // every writer stores the same value
  }
  __syncthreads();
  if (!any) return;
  const float* src = x + static_cast<size_t>(t0 + i) * hidden;
  for (int d = threadIdx.x; d < hidden; d += blockDim.x) row[d] = src[d];
}

// recv [rows, hidden + 2 * topK] (rows = W * per, rank s's block first at row s * per) into x
// [rows, hidden], ids [rows, topK] (this rank's local expert index through localOf, -1 for empty
// slots) and weights [rows, topK] (0 for empty slots). Rows without any id leave x unwritten: the
// expert kernels read x only for routed pairs.
// Mapping: one block per received row; threads over the slots, then over the hidden dim.
RM_KERNEL void rm_a2a_unpack(float* x, int* ids, float* weights, const float* recv,
                             const int* localOf, int numExperts, int hidden, int topK) {
  rm_pdl_prologue();
  __shared__ int any;
  const int r = blockIdx.x;
  const float* row = recv + static_cast<size_t>(r) * (hidden + 2 * topK);
  if (threadIdx.x == 0) any = 0;
  __syncthreads();
  for (int j = threadIdx.x; j < topK; j += blockDim.x) {
    const int id = __float_as_int(row[hidden + j]);
    const int local = id >= 0 && id < numExperts ? localOf[id] : -1;
    ids[static_cast<size_t>(r) * topK + j] = local;
    weights[static_cast<size_t>(r) * topK + j] = local >= 0 ? row[hidden + topK + j] : 0.f;
    if (local >= 0) any = 1;
  }
  __syncthreads();
  if (!any) return;
  float* dst = x + static_cast<size_t>(r) * hidden;
  for (int d = threadIdx.x; d < hidden; d += blockDim.x) dst[d] = row[d];
}

// out [per, hidden]: for slice token i < mine, out[i] = (shared ? shared[i] : 0) + sum over j in
// slot order of back[((owner(e_ij) * per + i) * topK + j)], back being the returned pair rows
// [W, per * topK, hidden]; rows mine..per are zeroed. shared may alias out (each element is read
// before it is written, by the same thread).
// Mapping: one block per slice row; the slots' source rows in dynamic shared memory (topK ints),
// threads over the hidden dim.
RM_KERNEL void rm_a2a_combine(float* out, const float* shared, const float* back, const int* ids,
                              const int* owner, int t0, int mine, int per, int hidden, int topK) {
  rm_pdl_prologue();
  extern __shared__ int pairRow[];
  const int i = blockIdx.x;
  float* dst = out + static_cast<size_t>(i) * hidden;
  if (i >= mine) {
    for (int d = threadIdx.x; d < hidden; d += blockDim.x) dst[d] = 0.f;
    return;
  }
  for (int j = threadIdx.x; j < topK; j += blockDim.x) {
    const int e = ids[static_cast<size_t>(t0 + i) * topK + j];
    pairRow[j] = (owner[e] * per + i) * topK + j;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < hidden; d += blockDim.x) {
    float s = shared != nullptr ? shared[static_cast<size_t>(i) * hidden + d] : 0.f;
    for (int j = 0; j < topK; j++) s += back[static_cast<size_t>(pairRow[j]) * hidden + d];
    dst[d] = s;
  }
}
