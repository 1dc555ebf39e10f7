// Shared helpers of the Ringmaster kernels. Conventions for every kernel in this folder:
// - weights are bf16 (raw uint16_t bits), activations f32, accumulation always f32;
// - every kernel is extern "C" so the host looks it up by its plain name;
// - no fast-math: expf/cosf/sinf are the accurate versions, matching the CPU reference to a few ulp.
#pragma once
#include <stdint.h>
#include <cuda_bf16.h>

#define RM_KERNEL extern "C" __global__

// Programmatic dependent launch (PDL). The first statement of every RM_KERNEL (PdlPrologueTest
// checks it; the kernels it lists issue loads of weights, which no kernel writes, before it). When the host launches a kernel with the programmatic stream serialization
// attribute (the default; --kernel-option pdl=false turns it off), the driver may start its blocks while the previous
// kernel of the stream still runs; then:
// - griddepcontrol.wait blocks until the previous grid has completed and its memory operations
//   are visible (PTX ISA, griddepcontrol). Being first, it precedes every global read (RAW) and
//   every global write that the previous kernel might still be reading (WAR), in every kernel
//   without exception. Chains are transitive: the previous kernel waited for its own predecessor
//   before it could complete. Without the attribute (PDL off, or after a library kernel that
//   never triggers) it returns at once, so the kernels are unchanged when PDL is off.
// - griddepcontrol.launch_dependents lets the next kernel launch early. It cannot starve this
//   kernel's blocks of SM slots: the CUDA C++ Programming Guide ("Programmatic Dependent Launch
//   and Synchronization", API description) says the driver launches the secondary kernel only
//   when all primary thread blocks have launched and executed the trigger (implicitly, when they
//   exit), so every block of this grid is already resident or done before any dependent block
//   takes a slot. The dependent's blocks then wait in their own prologue, so at most two grids
//   are in flight and the third is not launched until the second has passed its wait.
// Below sm_90 (no griddepcontrol) this is empty; the fatbin's targets are all sm_90 or newer.
__device__ __forceinline__ void rm_pdl_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// Unpacks 8 bf16 values held in one 16-byte load.
__device__ __forceinline__ void bf16x8_to_f32(const uint4 v, float* f) {
  f[0] = __uint_as_float(v.x << 16);
  f[1] = __uint_as_float(v.x & 0xffff0000u);
  f[2] = __uint_as_float(v.y << 16);
  f[3] = __uint_as_float(v.y & 0xffff0000u);
  f[4] = __uint_as_float(v.z << 16);
  f[5] = __uint_as_float(v.z & 0xffff0000u);
  f[6] = __uint_as_float(v.w << 16);
  f[7] = __uint_as_float(v.w & 0xffff0000u);
}

// Streaming 16-byte load that does not keep the line in L1 (weights are read once per step).
__device__ __forceinline__ uint4 load_stream_u4(const uint16_t* p) {
  return __ldcs(reinterpret_cast<const uint4*>(p));
}

// v[0..16) = p[0..16) (16-byte aligned activations) as four read-only float4 loads: the
// activation chunk that the FP8 and NVFP4 GEMV kernels multiply with 16 decoded weights.
__device__ __forceinline__ void load_f32x16(const float* p, float (&v)[16]) {
  const float4* p4 = reinterpret_cast<const float4*>(p);
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const float4 a = __ldg(p4 + q);
    v[4 * q] = a.x;
    v[4 * q + 1] = a.y;
    v[4 * q + 2] = a.z;
    v[4 * q + 3] = a.w;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide sum; every thread gets the result. `scratch` holds 32 floats; blockDim.x % 32 == 0.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.f;
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

// (value, index) arg-max where ties go to the lower index and index < 0 means "none yet"
// (so -inf values can still win over nothing, as the CPU reference's loops do).
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
  return bi < 0 || (i >= 0 && (v > bv || (v == bv && i < bi)));
}

__device__ __forceinline__ void warp_argmax(float& v, int& i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (better(ov, oi, v, i)) { v = ov; i = oi; }
  }
}

// Block-wide arg-max; every thread gets the winner. Scratch: 32 floats and 32 ints.
__device__ __forceinline__ void block_argmax(float& v, int& i, float* sv, int* si) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  warp_argmax(v, i);
  __syncthreads();
  if (lane == 0) { sv[warp] = v; si[warp] = i; }
  __syncthreads();
  v = lane < warps ? sv[lane] : -INFINITY;
  i = lane < warps ? si[lane] : -1;
  warp_argmax(v, i);
}
