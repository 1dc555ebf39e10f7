// One warp's dot products of R bf16 weight rows with up to NT f32 activation rows: the core of the
// decode GEMV and the fused MoE expert kernels.
#pragma once
#include "common.cuh"

// acc[r][j] += w[r][0..K) . xr[j][0..K) for r < R, j < nt (nt <= NT), partial per thread, summed
// by a group of LANES threads (a warp, or the warps that split a row's K) of which this thread is
// `lane`: the caller reduces the group (warp_sum per warp). When K % 8 == 0 each thread streams
// 16-byte weight chunks (8 bf16) lane, lane + LANES, ..., R * UNROLL of them in flight before the
// first use; the activations are read as two float4 per chunk (they stay in L1/L2, being shared by
// all warps). Otherwise a scalar path handles any K.
template <int R, int NT, int UNROLL, int LANES>
__device__ __forceinline__ void group_rows_dot(const uint16_t* const (&w)[R],
                                               const float* const (&xr)[NT], int nt, int K,
                                               int lane, float (&acc)[R][NT]) {
  if ((K & 7) == 0) {
    // Predicated groups of UNROLL chunks: a thread's chunks c, c + LANES, ... are summed in that
    // order whatever UNROLL (and R) is, and a row whose chunk count is not a multiple of LANES *
    // UNROLL (K = 1408 over a warp: 5.5 chunks per lane) still has all of a thread's loads of the
    // group in flight at once.
    const int chunks = K >> 3;
    for (int c = lane; c < chunks; c += LANES * UNROLL) {
      uint4 wv[R][UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          wv[r][u] = c + LANES * u < chunks
                         ? load_stream_u4(w[r] + static_cast<size_t>(c + LANES * u) * 8)
                         : make_uint4(0u, 0u, 0u, 0u);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        if (c + LANES * u >= chunks) break;
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) {
            const float4* xp =
                reinterpret_cast<const float4*>(xr[j] + static_cast<size_t>(c + LANES * u) * 8);
            const float4 a = __ldg(xp), b = __ldg(xp + 1);
#pragma unroll
            for (int r = 0; r < R; r++) {
              float wf[8];
              bf16x8_to_f32(wv[r][u], wf);
              acc[r][j] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                           wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
            }
          }
        }
      }
    }
  } else {
    for (int k = lane; k < K; k += LANES) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        const float wk = bf16_bits_to_f32(w[r][k]);
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) acc[r][j] += wk * xr[j][k];
        }
      }
    }
  }
}

// One warp's dot products: group_rows_dot over the warp's 32 lanes. A row's sum (per lane, then
// warp_sum) does not depend on R or UNROLL, so kernels that give a warp more rows or a deeper
// unroll produce the same bits as warp_row_dot.
template <int R, int NT, int UNROLL>
__device__ __forceinline__ void warp_rows_dot(const uint16_t* const (&w)[R],
                                              const float* const (&xr)[NT], int nt, int K,
                                              float (&acc)[R][NT]) {
  group_rows_dot<R, NT, UNROLL, 32>(w, xr, nt, K, threadIdx.x & 31, acc);
}

// Single-row form.
template <int NT, int UNROLL>
__device__ __forceinline__ void warp_row_dot(const uint16_t* w, const float* const (&xr)[NT], int nt,
                                             int K, float (&acc)[NT]) {
  const uint16_t* const rows[1] = {w};
  float a[1][NT];
#pragma unroll
  for (int j = 0; j < NT; j++) a[0][j] = acc[j];
  warp_rows_dot<1, NT, UNROLL>(rows, xr, nt, K, a);
#pragma unroll
  for (int j = 0; j < NT; j++) acc[j] = a[0][j];
}

// acc[r] += w[r][0..K) . xr[r][0..K) for r < R: R rows, each against its own activation row (the
// routed pairs of one token, each with its expert's row and its own intermediate); a null row is
// skipped without a load. The same per-lane
// order and expression as warp_rows_dot, so a pair's sum equals the one warp_row_dot gives it.
template <int R, int UNROLL>
__device__ __forceinline__ void warp_pairs_dot(const uint16_t* const (&w)[R],
                                               const float* const (&xr)[R], int K,
                                               float (&acc)[R]) {
  const int lane = threadIdx.x & 31;
  if ((K & 7) == 0) {
    const int chunks = K >> 3;
    for (int c = lane; c < chunks; c += 32 * UNROLL) {
      uint4 wv[R][UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          wv[r][u] = c + 32 * u < chunks && w[r] != nullptr
                         ? load_stream_u4(w[r] + static_cast<size_t>(c + 32 * u) * 8)
                         : make_uint4(0u, 0u, 0u, 0u);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        if (c + 32 * u >= chunks) break;
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (w[r] == nullptr) continue;
          const float4* xp = reinterpret_cast<const float4*>(xr[r] + static_cast<size_t>(c + 32 * u) * 8);
          const float4 a = __ldg(xp), b = __ldg(xp + 1);
          float wf[8];
          bf16x8_to_f32(wv[r][u], wf);
          acc[r] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                    wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
        }
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
#pragma unroll
      for (int r = 0; r < R; r++) {
        if (w[r] != nullptr) acc[r] += bf16_bits_to_f32(w[r][k]) * xr[r][k];
      }
    }
  }
}
