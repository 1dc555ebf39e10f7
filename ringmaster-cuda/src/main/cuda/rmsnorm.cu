// RMSNorm with an optional fused residual add.
#pragma once
#include "common.cuh"

constexpr int kNormVecPerThread = 8;  // float4s a thread holds: rows up to 8192 at 256 threads

__device__ __forceinline__ bool norm_aligned(const void* p, int stride) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0 && (stride & 3) == 0;
}

// The vector path's second half, shared by every kernel that ends in an RMSNorm of a row held in
// registers (thread i holds float4s i, i + blockDim.x, ...; n4 of them in all), so that each
// computes the same sum of squares and the same products: out = weight * (v / sqrt(mean(v^2) +
// eps)).
__device__ __forceinline__ void norm_row_vec(float* o, const float4 (&v)[kNormVecPerThread], int n4,
                                             const float* weight, int dim, float eps,
                                             float* scratch) {
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
    norm_row_vec(o, v, n4, weight, dim, eps, scratch);
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

// rm_moe_combine followed by rm_rmsnorm with the residual, in one launch: for each row r,
//   s = (shared != nullptr ? shared[r] : 0) + y[r * topK] + ... + y[r * topK + topK - 1]
//   (in slot order, as rm_moe_combine), residual[r] += s, out[r] = weight * rmsnorm(residual[r]);
// the same bits as the two kernels (the combined row itself is not stored). Rows are contiguous,
// `dim` values each. Mapping: one block per row; the vector path of rm_rmsnorm when the rows are
// 16-byte aligned and fit (every load of the row in flight at once), else threads stride twice.
constexpr int kCombineMaxTopK = 8;  // slots whose loads rm_moe_combine_rmsnorm issues together

RM_KERNEL void rm_moe_combine_rmsnorm(float* out, float* residual, const float* shared,
                                      const float* y, int topK, const float* weight, int dim,
                                      float eps) {
  rm_pdl_prologue();
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const size_t row = static_cast<size_t>(r) * dim;
  const int n4 = dim / 4;
  const bool vec = (dim & 3) == 0 && n4 <= kNormVecPerThread * static_cast<int>(blockDim.x) &&
                   norm_aligned(out, dim) && norm_aligned(residual, dim) &&
                   norm_aligned(y, dim) && norm_aligned(weight, 0) &&
                   (shared == nullptr || norm_aligned(shared, dim));
  if (vec) {
    float4 v[kNormVecPerThread];
#pragma unroll
    for (int j = 0; j < kNormVecPerThread; j++) {
      const int i = threadIdx.x + j * blockDim.x;
      if (i < n4) {
        v[j] = shared != nullptr ? reinterpret_cast<const float4*>(shared + row)[i]
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
    const float4* y4 = reinterpret_cast<const float4*>(y + static_cast<size_t>(r) * topK * dim);
    if (n4 <= 2 * static_cast<int>(blockDim.x) && topK <= kCombineMaxTopK) {
      // Every slot's loads in flight at once (V2-Lite: 2 x 6 float4 a thread), then the sums in
      // slot order.
      float4 a[kCombineMaxTopK][2];
#pragma unroll
      for (int k = 0; k < kCombineMaxTopK; k++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
          const int i = threadIdx.x + j * blockDim.x;
          if (k < topK && i < n4) a[k][j] = y4[static_cast<size_t>(k) * n4 + i];
        }
      }
#pragma unroll
      for (int k = 0; k < kCombineMaxTopK; k++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
          const int i = threadIdx.x + j * blockDim.x;
          if (k < topK && i < n4) {
            v[j] = make_float4(v[j].x + a[k][j].x, v[j].y + a[k][j].y, v[j].z + a[k][j].z,
                               v[j].w + a[k][j].w);
          }
        }
      }
    } else {
      for (int k = 0; k < topK; k++) {
#pragma unroll
        for (int j = 0; j < kNormVecPerThread; j++) {
          const int i = threadIdx.x + j * blockDim.x;
          if (i < n4) {
            const float4 a = y4[static_cast<size_t>(k) * n4 + i];
            v[j] = make_float4(v[j].x + a.x, v[j].y + a.y, v[j].z + a.z, v[j].w + a.w);
          }
        }
      }
    }
    float4* r4 = reinterpret_cast<float4*>(residual + row);
#pragma unroll
    for (int j = 0; j < kNormVecPerThread; j++) {
      const int i = threadIdx.x + j * blockDim.x;
      if (i < n4) {
        const float4 a = r4[i];
        v[j] = make_float4(v[j].x + a.x, v[j].y + a.y, v[j].z + a.z, v[j].w + a.w);
        r4[i] = v[j];
      }
    }
    norm_row_vec(out + row, v, n4, weight, dim, eps, scratch);
    return;
  }
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = shared != nullptr ? shared[row + i] : 0.f;
    for (int k = 0; k < topK; k++) v += y[(static_cast<size_t>(r) * topK + k) * dim + i];
    v += residual[row + i];
    residual[row + i] = v;
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float inv = 1.f / sqrtf(ss / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    out[row + i] = weight[i] * (residual[row + i] * inv);
  }
}
