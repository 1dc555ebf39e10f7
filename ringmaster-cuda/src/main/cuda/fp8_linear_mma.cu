// Dense (non-expert) FP8 linears on tensor cores for steps of a few dozen tokens (decode batches
// beyond the GEMV's 4 tokens): y[t] = dequant(W) x[t], W e4m3 [M, K] with 128x128 block scales in
// parts of partRows rows (fp8_weights.cu's layout), x and y f32. The codes are read once per pass
// of up to 32 tokens, as the FP8 experts read theirs (fp8_moe_mma.cu's fp8_mma_rows: 16-byte loads
// of 16 codes, exact decode to bf16 fragments, per-block partial accumulators times the scale),
// instead of being dequantized to a bf16 copy that cuBLAS reads again (5 bytes of traffic per
// weight against 1).
//   rm_linear_mma_fp8  grid (ceil(M / 64), ceil(n / 32), splits): block (x, y, z) computes the 64
//                      rows x of token pass y over the z-th slice of kSlice columns (a multiple of
//                      128), into y itself (one split) or into partials [splits, n, M];
//   rm_sum_splits      y[i] = parts[0][i] + parts[1][i] + ... in split order.
//   rm_sum_splits_swiglu  the same sums of a gate|up product's partials, then silu(gate) * up
//                      (rm_silu_mul's expression) in one launch: the same bits as the two kernels.
// Splitting K keeps every SM streaming where M / 64 blocks alone would leave most of them idle (MLA's
// kv_a has 9 row blocks); the split count depends on M and K only, so a token's row is the same
// whatever the batch (every column's mma sequence is independent of the other tokens, and the
// slices are summed in a fixed order). Needs K % 8 == 0 and partRows % 16 == 0 (a warp's 16 rows in
// one scale block).
#pragma once
#include "fp8_moe_mma.cu"

// The pass's token rows of x (row stride ldx floats, from column k0), rounded to bf16 and staged as
// fp8_mma_rows expects (MoeMmaStageX over consecutive rows instead of routed pairs).
template <int NTOK, int CH>
struct Fp8LinearStageX {
  using Slots = MoeMmaSlots<NTOK, CH, 16>;
  const float* src[Slots::kSources];
  int K;
  __device__ Fp8LinearStageX(const float* x, int t0, int nt, size_t ldx, int k0, int kLen)
      : K(kLen) {
#pragma unroll
    for (int v = 0; v < Slots::kSources; v++) {
      const int j = Slots::slot(v);
      src[v] = j < nt ? x + static_cast<size_t>(t0 + j) * ldx + k0 : nullptr;
    }
  }
  __device__ void operator()(int s, uint4* buf) const {
    Slots::write(buf, s, K, src, [this](int v, int k) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(src[v] + k));
      const float4 b = __ldg(reinterpret_cast<const float4*>(src[v] + k) + 1);
      return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                        pack_bf16x2(b.z, b.w));
    });
  }
};

template <int NT>
__device__ __forceinline__ void fp8_linear_mma_pass(float* out, const uint8_t* const (&w)[1][2],
                                                    const float* const (&srow)[1],
                                                    const bool (&rowOk)[2], const float* x, int t0,
                                                    int nt, int r0, int M, int K, int k0, int kLen,
                                                    uint4* buf0, uint4* buf1) {
  const Fp8LinearStageX<NT * 8, 2 * kFp8MmaDownChunks> stage(x, t0, nt, K, k0, kLen);
  float acc[1][NT][4];
  fp8_mma_rows<1, kFp8MmaDownChunks, NT>(acc, w, srow, rowOk, kLen, stage, buf0, buf1, K);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int row = r0 + g + (i >> 1) * 8, tok = t * 8 + 2 * q + (i & 1);
      if (row < M && tok < nt) out[static_cast<size_t>(t0 + tok) * M + row] = acc[0][t][i];
    }
  }
}

// y (or partials[blockIdx.z]) [n, M] = the K slice's part of x . dequant(W)^T. Needs K % 8 == 0,
// partRows % 16 == 0, kSlice % 128 == 0.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_linear_mma_fp8(float* y, const uint8_t* W, const float* S, int partRows, const float* x,
                      int M, int K, int n, int kSlice) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][2 * kFp8MmaDownChunks * kMoeMmaPassTokens * 4];
  const int g = (threadIdx.x & 31) >> 2;
  const int r0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const int t0 = blockIdx.y * kMoeMmaPassTokens;
  const int nt = min(kMoeMmaPassTokens, n - t0);
  const int k0 = blockIdx.z * kSlice;
  const int kLen = min(kSlice, K - k0);
  if (nt <= 0 || kLen <= 0) return;
  const bool rowOk[2] = {r0 + g < M, r0 + g + 8 < M};
  const uint8_t* w[1][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(r0 + g + 8 * h, M - 1);  // never read when past the end
    w[0][h] = W + static_cast<size_t>(row) * K + k0;
  }
  const float* const srow[1] = {fp8_scale_row(S, min(r0, M - 1), partRows, K) + k0 / kFp8Block};
  float* out = y + static_cast<size_t>(blockIdx.z) * n * M;
  if (nt <= 8) {
    fp8_linear_mma_pass<1>(out, w, srow, rowOk, x, t0, nt, r0, M, K, k0, kLen, xs[0], xs[1]);
  } else if (nt <= 16) {
    fp8_linear_mma_pass<2>(out, w, srow, rowOk, x, t0, nt, r0, M, K, k0, kLen, xs[0], xs[1]);
  } else {
    fp8_linear_mma_pass<4>(out, w, srow, rowOk, x, t0, nt, r0, M, K, k0, kLen, xs[0], xs[1]);
  }
}

// y[i] = sum over z < splits of parts[z * count + i], in z order. Grid-stride.
RM_KERNEL void rm_sum_splits(float* y, const float* parts, int splits, long long count) {
  rm_pdl_prologue();
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    float v = parts[i];
    for (int z = 1; z < splits; z++) v += parts[z * count + i];
    y[i] = v;
  }
}

// out[t, j] = silu(g) * u for t < n, j < inter, where g and u are the rm_sum_splits sums (z order)
// of the partials [splits, n, 2 * inter] of a gate|up product at columns j and inter + j: what
// rm_sum_splits followed by rm_silu_mul writes, without the [n, 2 * inter] round trip and launch.
// Grid-stride over the outputs.
RM_KERNEL void rm_sum_splits_swiglu(float* out, const float* parts, int splits, int n, int inter) {
  rm_pdl_prologue();
  const long long count = 2LL * n * inter, total = static_cast<long long>(n) * inter;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += stride) {
    const long long r = e / inter, i = e % inter;
    const long long gi = r * 2 * inter + i, ui = gi + inter;
    float g = parts[gi];
    for (int z = 1; z < splits; z++) g += parts[z * count + gi];
    float u = parts[ui];
    for (int z = 1; z < splits; z++) u += parts[z * count + ui];
    out[e] = (g / (1.f + expf(-g))) * u;
  }
}
