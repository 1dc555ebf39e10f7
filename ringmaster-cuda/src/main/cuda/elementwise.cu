// Element-wise kernels: embedding gather, SiLU-and-mul, f32 -> bf16 conversion, bias add.
#pragma once
#include "common.cuh"

// out[t, :] = f32(table[ids[t], :]).
// Mapping: one block per token, threads stride over the hidden dim (coalesced row copy).
RM_KERNEL void rm_embedding_bf16(float* out, const uint16_t* table, const int* ids, int hidden) {
  rm_pdl_prologue();
  const int t = blockIdx.x;
  const uint16_t* row = table + static_cast<size_t>(ids[t]) * hidden;
  float* dst = out + static_cast<size_t>(t) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = bf16_bits_to_f32(row[i]);
}

// out[r, i] = silu(gate[r, i]) * up[r, i] for rows x cols; gate and up share a row stride, so a fused
// gate|up projection [rows, 2*inter] is passed as gate = base, up = base + inter, inStride = 2*inter.
// Mapping: grid-stride loop, one thread per element.
RM_KERNEL void rm_silu_mul(float* out, int outStride, const float* gate, const float* up,
                           int inStride, int rows, int cols) {
  rm_pdl_prologue();
  const long long total = static_cast<long long>(rows) * cols;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(e / cols), i = static_cast<int>(e % cols);
    const float g = gate[static_cast<size_t>(r) * inStride + i];
    const float u = up[static_cast<size_t>(r) * inStride + i];
    out[static_cast<size_t>(r) * outStride + i] = (g / (1.f + expf(-g))) * u;
  }
}

// out[i] = bf16(in[i]) (round to nearest even), for cuBLAS inputs.
// Mapping: grid-stride loop, one thread per element.
RM_KERNEL void rm_f32_to_bf16(uint16_t* out, const float* in, long long n) {
  rm_pdl_prologue();
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[e] = f32_to_bf16_bits(in[e]);
  }
}

// y[r, i] += bias[i] for rows x cols (biases of linear layers; cuBLAS and the GEMV write y without).
// Mapping: grid-stride loop, one thread per element.
RM_KERNEL void rm_add_bias(float* y, const float* bias, int rows, int cols) {
  rm_pdl_prologue();
  const long long total = static_cast<long long>(rows) * cols;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    y[e] += bias[e % cols];
  }
}
