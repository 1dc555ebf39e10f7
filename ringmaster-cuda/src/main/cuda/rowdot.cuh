// One warp's dot products of a bf16 weight row with up to NT f32 activation rows: the core of the
// decode GEMV and the fused MoE expert kernels.
#pragma once
#include "common.cuh"

// acc[j] += w[0..K) . xr[j][0..K) for j < nt (nt <= NT), partial per lane: the caller reduces the
// warp with warp_sum. When K % 8 == 0 each lane streams 16-byte weight chunks (8 bf16), UNROLL of them
// in flight before the first use; the activations are read as two float4 per chunk (they stay in
// L1/L2, being shared by all warps). Otherwise a scalar path handles any K.
template <int NT, int UNROLL>
__device__ __forceinline__ void warp_row_dot(const uint16_t* __restrict__ w,
                                             const float* const (&xr)[NT], int nt, int K,
                                             float (&acc)[NT]) {
  const int lane = threadIdx.x & 31;
  if ((K & 7) == 0) {
    const int chunks = K >> 3;
    int c = lane;
    for (; c + 32 * (UNROLL - 1) < chunks; c += 32 * UNROLL) {
      uint4 wv[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) wv[u] = load_stream_u4(w + static_cast<size_t>(c + 32 * u) * 8);
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        float wf[8];
        bf16x8_to_f32(wv[u], wf);
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (j < nt) {
            const float4* xp = reinterpret_cast<const float4*>(xr[j] + static_cast<size_t>(c + 32 * u) * 8);
            const float4 a = __ldg(xp), b = __ldg(xp + 1);
            acc[j] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                      wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
          }
        }
      }
    }
    for (; c < chunks; c += 32) {
      float wf[8];
      bf16x8_to_f32(load_stream_u4(w + static_cast<size_t>(c) * 8), wf);
#pragma unroll
      for (int j = 0; j < NT; j++) {
        if (j < nt) {
          const float4* xp = reinterpret_cast<const float4*>(xr[j] + static_cast<size_t>(c) * 8);
          const float4 a = __ldg(xp), b = __ldg(xp + 1);
          acc[j] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                    wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
        }
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
      const float wk = bf16_bits_to_f32(w[k]);
#pragma unroll
      for (int j = 0; j < NT; j++) {
        if (j < nt) acc[j] += wk * xr[j][k];
      }
    }
  }
}
