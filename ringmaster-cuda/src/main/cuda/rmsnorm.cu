// RMSNorm with an optional fused residual add.
#pragma once
#include "common.cuh"

// For each row r:  v = x[r] (+ residual[r] when residual != nullptr, and residual[r] = v);
//                  out[r] = weight * (v / sqrt(mean(v^2) + eps)).
// Rows are `dim` values with their own strides, so a slice of a wider row (the KV latent before the
// rotary key) is normalised in place with out == x and equal strides.
// Mapping: one block per row; threads stride over the row twice (sum of squares, then scale).
RM_KERNEL void rm_rmsnorm(float* out, int outStride, float* residual, int residualStride,
                          const float* x, int xStride, const float* weight, int dim, float eps) {
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const float* xr = x + static_cast<size_t>(r) * xStride;
  float* res = residual != nullptr ? residual + static_cast<size_t>(r) * residualStride : nullptr;
  float* o = out + static_cast<size_t>(r) * outStride;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = xr[i];
    if (res != nullptr) {
      v += res[i];
      res[i] = v;
    }
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(ss / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = res != nullptr ? res[i] : xr[i];
    o[i] = weight[i] * (v * inv);
  }
}
