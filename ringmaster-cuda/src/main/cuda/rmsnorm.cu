// RMSNorm with an optional fused residual add.
#pragma once
#include "common.cuh"

constexpr int kNormVecPerThread = 8;  // float4s a thread holds: rows up to 8192 at 256 threads

__device__ __forceinline__ bool norm_aligned(const void* p, int stride) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0 && (stride & 3) == 0;
}

// For each row r:  v = x[r] (+ residual[r] when residual != nullptr, and residual[r] = v);
//                  out[r] = weight * (v / sqrt(mean(v^2) + eps)).
// Rows are `dim` values with their own strides, so a slice of a wider row (the KV latent before the
// rotary key) is normalised in place with out == x and equal strides.
// Mapping: one block per row. Where rows are 16-byte aligned and fit, each thread loads its float4s
// of the row (and of the residual) all at once into registers, so a row costs one memory latency
// instead of one per strided step (at batch 1 this kernel is pure latency); otherwise threads
// stride over the row twice.
RM_KERNEL void rm_rmsnorm(float* out, int outStride, float* residual, int residualStride,
                          const float* x, int xStride, const float* weight, int dim, float eps) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const float* xr = x + static_cast<size_t>(r) * xStride;
  float* res = residual != nullptr ? residual + static_cast<size_t>(r) * residualStride : nullptr;
  float* o = out + static_cast<size_t>(r) * outStride;
  const int n4 = dim / 4;
  const bool vec = (dim & 3) == 0 && n4 <= kNormVecPerThread * static_cast<int>(blockDim.x) &&
                   norm_aligned(xr, xStride) && norm_aligned(o, outStride) &&
                   norm_aligned(weight, 0) && (res == nullptr || norm_aligned(res, residualStride));
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* r4 = reinterpret_cast<float4*>(res);
    float4 v[kNormVecPerThread];
#pragma unroll
    for (int j = 0; j < kNormVecPerThread; j++) {
      const int i = threadIdx.x + j * blockDim.x;
      if (i < n4) v[j] = x4[i];
    }
    if (res != nullptr) {
      float4 a[kNormVecPerThread];
#pragma unroll
      for (int j = 0; j < kNormVecPerThread; j++) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < n4) a[j] = r4[i];
      }
#pragma unroll
      for (int j = 0; j < kNormVecPerThread; j++) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < n4) {
          v[j] = make_float4(v[j].x + a[j].x, v[j].y + a[j].y, v[j].z + a[j].z, v[j].w + a[j].w);
          r4[i] = v[j];
        }
      }
    }
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < kNormVecPerThread; j++) {
      if (threadIdx.x + j * blockDim.x < n4) {
        ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
      }
    }
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(ss / dim + eps);
    const float4* w4 = reinterpret_cast<const float4*>(weight);
    float4* o4 = reinterpret_cast<float4*>(o);
#pragma unroll
    for (int j = 0; j < kNormVecPerThread; j++) {
      const int i = threadIdx.x + j * blockDim.x;
      if (i < n4) {
        const float4 w = w4[i];
        o4[i] = make_float4(w.x * (v[j].x * inv), w.y * (v[j].y * inv), w.z * (v[j].z * inv),
                            w.w * (v[j].w * inv));
      }
    }
    return;
  }
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
