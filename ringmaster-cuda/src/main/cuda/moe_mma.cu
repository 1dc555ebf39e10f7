// Tensor-core routed experts for decode batches and prefill: each active expert's weights are
// streamed once per pass of up to 32 of its tokens (one pass covers almost every expert of a decode
// step up to batch ~128), at full memory bandwidth however few tokens the expert has, because the
// bytes in flight per SM no longer depend on the token count (the CUDA-core kernels in
// moe_experts.cu keep fewer loads in flight the more tokens a pass carries). The *64 kernels take
// passes of up to 64 tokens (8 token tiles: twice the accumulators, 2 blocks per SM instead of 3 on
// sm_90) for large batches, where an average expert has more than 32 tokens and the 32-token kernels
// would stream its weights two or more times as often (RingmasterKernels picks them).
//   rm_moe_gate_up_mma  hs[q] = bf16(silu(W_gate[e] x[t]) * (W_up[e] x[t])) for the q-th sorted pair
//                       (expert order, as rm_moe_align leaves them), t = sortedPairs[q] / topK;
//   rm_moe_down_mma     y[p] = weight[p] * W_down[e] hs[q] for p = sortedPairs[q], in pair order, so
//                       rm_moe_combine sums them per token in slot order as for the other kernels.
//   rm_moe_gate_up_mma64, rm_moe_down_mma64: the same in passes of up to 64 tokens.
// Same launches around them as the CUDA-core path: rm_moe_align before, rm_moe_combine after.
//
// Mapping: grid (ceil(rows / 64), min(pairs, E)); blockIdx.y picks the active expert (blocks past
// *activeCount exit), 4 warps, each warp owns 16 output rows (gate/up: 16 intermediate rows, i.e. 16
// gate and 16 up weight rows, so silu(gate) * up is formed in registers) over the whole reduction
// dimension K, and keeps all of the expert's tokens of the pass (up to 4, or 8, tiles of 8; a pass
// that holds fewer takes 1, 2 or 4 tiles) as the N side of mma.sync m16n8k16 (bf16 in, f32
// accumulate): weights are operand A (16 rows x 16 k, row-major, as stored), tokens operand B (16 k x
// 8 tokens, col-major = token rows, as staged).
//
// Fragments without shared memory for the weights: the order of the 16 k values inside one mma is
// free as long as A and B agree. Lane (g = lane / 4, q = lane % 4) loads 16 bytes (8 k) at k = 32c +
// 8q of weight rows g and g + 8 of its tile; those 4 + 4 registers are exactly the A fragments of
// two mmas (x, y for the first, z, w for the second) if mma k index 2q + j means physical k 32c + 8q
// + j and 2q + 8 + j means 32c + 8q + 2 + j (first mma; + 4 for the second). The B fragment of lane
// (g, q) then needs token g's same 8 k: one 16-byte shared load per chunk and token tile.
//
// Pipeline: K runs in stages of 8 weight loads of 16 bytes per lane (gate/up: 2 chunks of 32 k for 2
// tiles; down: 4 chunks for 1 tile; sm_120's 64-token gate/up passes: 1 chunk, 4 loads, see
// moe_mma_gate_up_chunks). Two register sets alternate: stage s + 1 is in flight while
// stage s is multiplied, and the loads carry an L2 prefetch hint of 256 bytes, so the next stage's
// lines are usually on their way too. The tokens' activations for a stage are staged (rounded to
// bf16) into one of two small shared buffers by the whole block, one barrier per stage.
//
// Determinism: every (pair, row) result is the same sequence of mmas over k in the same order,
// whichever tile, column or pass its token lands in and whichever other tokens share the expert; the
// pass size only changes how many columns are padding (zeros, never stored). That holds across the
// 32- and 64-token kernels too: they run the same code for any pass of up to 32 tokens, and a
// 64-token pass is the same per-column mma sequence on 8 tiles instead of 4 (stage sizes in chunks
// only group the same k order differently), so a pair's result is bit-identical whichever kernel the
// batch size selects.
#pragma once
#include "common.cuh"

constexpr int kMoeMmaWarps = 4;
constexpr int kMoeMmaThreads = 32 * kMoeMmaWarps;
constexpr int kMoeMmaRowsPerBlock = 16 * kMoeMmaWarps;
// Token tiles of 8 per pass, a template parameter PT of the kernel bodies: 4 (decode batches) keeps
// the gate/up accumulators at 32 registers, 8 (large batches, the *64 kernels) at 64 registers; an
// expert with more tokens than PT * 8 takes extra passes (each re-streams the block's weight rows).
constexpr int kMoeMmaTokenTiles = 4;
constexpr int kMoeMmaPassTokens = 8 * kMoeMmaTokenTiles;
constexpr int kMoeMmaWideTokenTiles = 8;
constexpr int kMoeMmaWidePassTokens = 8 * kMoeMmaWideTokenTiles;
// 32-k chunks per pipeline stage: 8 loads of 16 bytes per lane either way.
constexpr int kMoeMmaGateUpChunks = 2;
constexpr int kMoeMmaDownChunks = 4;

// Gate/up chunks per stage of a pass over NT token tiles. sm_120's ptxas keeps more fragments live
// (the 32-token gate/up takes 206 registers there, 162 on sm_90), so its 64-token passes stage one
// chunk at a time (4 loads per lane in flight per register set instead of 8) to stay within 255
// registers without spills. The per-pair mma sequence over k is the same either way (a 2-chunk
// stage's chunk past K only adds zero products).
template <int NT>
__device__ constexpr int moe_mma_gate_up_chunks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  return NT > kMoeMmaTokenTiles ? 1 : kMoeMmaGateUpChunks;
#else
  return kMoeMmaGateUpChunks;
#endif
}

// 16-byte weight load, predicated (zeros when !ok, no access): read-only path, no L1 allocation
// (weights are read once), and a hint to fetch the whole 256-byte L2 block, which holds the row's
// next chunks that this lane loads in the coming stages.
__device__ __forceinline__ uint4 moe_mma_load_weights(const uint16_t* p, bool ok) {
  uint4 v;
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %5, 0;\n"
      "  mov.b32 %0, 0;\n"
      "  mov.b32 %1, 0;\n"
      "  mov.b32 %2, 0;\n"
      "  mov.b32 %3, 0;\n"
      "  @p ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      "}\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "r"(static_cast<int>(ok)));
  return v;
}

// d += A (16x16, row-major fragments a0..a3) * B (16x8, col-major fragments b0, b1), f32 accumulate.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                               uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<uint32_t>(f32_to_bf16_bits(lo)) |
         (static_cast<uint32_t>(f32_to_bf16_bits(hi)) << 16);
}

// Weight registers of stage s for MT row tiles: r[m][h][c] holds 8 k at 32 (s*CH + c) + 8q of row
// g + 8h of tile m (zeros past K or past the last row).
template <int MT, int CH>
__device__ __forceinline__ void moe_mma_load_stage(uint4 (&r)[MT][2][CH],
                                                   const uint16_t* const (&w)[MT][2],
                                                   const bool (&rowOk)[2], int s, int K) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int c = 0; c < CH; c++) {
    const int k = (s * CH + c) * 32 + q * 8;
#pragma unroll
    for (int h = 0; h < 2; h++) {
#pragma unroll
      for (int m = 0; m < MT; m++) r[m][h][c] = moe_mma_load_weights(w[m][h] + k, rowOk[h] && k < K);
    }
  }
}

// acc[m][t] += stage's weights of tile m times token tile t. Staged tokens: chunk c, token j, lane
// quad q at xs[(c * NT * 8 + j) * 4 + q] (16 bytes each), so a warp reads 512 contiguous bytes.
template <int MT, int CH, int NT>
__device__ __forceinline__ void moe_mma_stage(float (&acc)[MT][NT][4], const uint4 (&r)[MT][2][CH],
                                              const uint4* xs) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int c = 0; c < CH; c++) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
      const uint4 b = xs[(c * NT * 8 + t * 8 + g) * 4 + q];
#pragma unroll
      for (int m = 0; m < MT; m++) {
        mma_bf16_16816(acc[m][t], r[m][0][c].x, r[m][1][c].x, r[m][0][c].y, r[m][1][c].y, b.x, b.y);
        mma_bf16_16816(acc[m][t], r[m][0][c].z, r[m][1][c].z, r[m][0][c].w, r[m][1][c].w, b.z, b.w);
      }
    }
  }
}

// One pass: acc[m][t] = rows of tile m (this warp's 16) dot the pass's NT * 8 token slots over all
// of K. `stage(s, buf)` writes the slots' activations of stage s into a shared buffer (whole
// block). Ends with a barrier, so the buffers are free for the next pass.
template <int MT, int CH, int NT, class Stager>
__device__ __forceinline__ void moe_mma_rows(float (&acc)[MT][NT][4],
                                             const uint16_t* const (&w)[MT][2],
                                             const bool (&rowOk)[2], int K, const Stager& stage,
                                             uint4* buf0, uint4* buf1) {
#pragma unroll
  for (int m = 0; m < MT; m++) {
#pragma unroll
    for (int t = 0; t < NT; t++) acc[m][t][0] = acc[m][t][1] = acc[m][t][2] = acc[m][t][3] = 0.f;
  }
  const int stages = (K + CH * 32 - 1) / (CH * 32);
  uint4 ra[MT][2][CH], rb[MT][2][CH];
  moe_mma_load_stage<MT, CH>(ra, w, rowOk, 0, K);
  stage(0, buf0);
  __syncthreads();
  // Unrolled by two so that the two register sets keep fixed names (no copies that would wait for
  // the loads before the next stage's are issued).
  for (int s = 0; s < stages; s += 2) {
    if (s + 1 < stages) {
      moe_mma_load_stage<MT, CH>(rb, w, rowOk, s + 1, K);
      stage(s + 1, buf1);
    }
    moe_mma_stage<MT, CH, NT>(acc, ra, buf0);
    __syncthreads();  // buf1 complete; buf0 free
    if (s + 1 >= stages) break;
    if (s + 2 < stages) {
      moe_mma_load_stage<MT, CH>(ra, w, rowOk, s + 2, K);
      stage(s + 2, buf0);
    }
    moe_mma_stage<MT, CH, NT>(acc, rb, buf1);
    __syncthreads();  // buf0 complete; buf1 free
  }
}

// Staging of a pass's token slots: slot j of NTOK, 16-byte unit u = (c * NTOK + j) * 4 + q of a stage
// (column c, 8 k at 32c + 8q; with LANE_K = 8L k per lane per chunk, the layout of chunks of 32L k
// that fp8_moe_mma.cu (L = 2) and nvfp4_moe_mma.cu (L = 4) read: 8 k at 32L (c / L) + 8Lq + 8 (c % L)). Thread i writes units i, i + 128, ...; its r-th unit has slot
// ((i / 4) + 32 r) % NTOK. When NTOK divides 32 that is (i / 4) % NTOK for all of them, so each
// thread reads a single source row; when NTOK is a multiple of 32 (64) it is (i / 4) % 32 + 32 v
// with v = r % (NTOK / 32): kSources rows per thread, fixed per unrolled r. Slots past the pass's
// tokens and k past K are zeros.
template <int NTOK, int CH, int LANE_K = 8>
struct MoeMmaSlots {
  static_assert(LANE_K == 8 || LANE_K == 16 || LANE_K == 32, "8, 16 or 32 k per lane per chunk");
  static_assert(32 % NTOK == 0 || NTOK % 32 == 0, "a thread's units must cycle over fixed slots");
  static constexpr int kSources = NTOK > 32 ? NTOK / 32 : 1;
  static constexpr int kUnits = CH * NTOK * 4;
  static constexpr int kPerThread = (kUnits + kMoeMmaThreads - 1) / kMoeMmaThreads;
  static_assert(kPerThread % kSources == 0, "every source row gets the same units");

  // Slot of this thread's v-th source row (v < kSources).
  __device__ static int slot(int v) { return (threadIdx.x >> 2) % NTOK + 32 * v; }

  // Calls fill(v, k) -> uint4 for this thread's valid units of stage s (v: the unit's source row,
  // live when src[v] is not null), zeros elsewhere.
  template <class T, class Fill>
  __device__ static void write(uint4* buf, int s, int K, const T* const (&src)[kSources],
                               const Fill& fill) {
#pragma unroll
    for (int r = 0; r < kPerThread; r++) {
      const int u = threadIdx.x + r * kMoeMmaThreads;
      const int v = r % kSources;
      if (kUnits % kMoeMmaThreads == 0 || u < kUnits) {
        const int c = s * CH + (u >> 2) / NTOK;
        const int k = LANE_K == 8    ? c * 32 + (u & 3) * 8
                      : LANE_K == 16 ? (c >> 1) * 64 + (u & 3) * 16 + (c & 1) * 8
                                     : (c >> 2) * 128 + (u & 3) * 32 + (c & 3) * 8;
        buf[u] = src[v] != nullptr && k < K ? fill(v, k) : make_uint4(0, 0, 0, 0);
      }
    }
  }
};

// Gate/up input: token rows of f32 x, rounded to bf16 (round to nearest even).
template <int NTOK, int CH, int LANE_K = 8>
struct MoeMmaStageX {
  using Slots = MoeMmaSlots<NTOK, CH, LANE_K>;
  const float* src[Slots::kSources];  // this thread's slots' token rows; null for padding slots
  int K;
  __device__ MoeMmaStageX(const float* x, const int* pairs, int nt, int topK, int hidden) : K(hidden) {
#pragma unroll
    for (int v = 0; v < Slots::kSources; v++) {
      const int j = Slots::slot(v);
      src[v] = j < nt ? x + static_cast<size_t>(pairs[j] / topK) * hidden : nullptr;
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

// Down input: the pass's rows of the bf16 intermediate, contiguous in sorted-pair order, CH chunks
// of 32 k per stage.
template <int NTOK, int CH = kMoeMmaDownChunks, int LANE_K = 8>
struct MoeMmaStageH {
  using Slots = MoeMmaSlots<NTOK, CH, LANE_K>;
  const uint16_t* src[Slots::kSources];
  int K;
  __device__ MoeMmaStageH(const uint16_t* hs, int first, int nt, int inter) : K(inter) {
#pragma unroll
    for (int v = 0; v < Slots::kSources; v++) {
      const int j = Slots::slot(v);
      src[v] = j < nt ? hs + static_cast<size_t>(first + j) * inter : nullptr;
    }
  }
  __device__ void operator()(int s, uint4* buf) const {
    Slots::write(buf, s, K, src, [this](int v, int k) {
      return __ldg(reinterpret_cast<const uint4*>(src[v] + k));
    });
  }
};

// Accumulator element i of a tile: row g + 8 (i / 2), token column 2q + (i % 2).
template <int NT>
__device__ __forceinline__ void moe_gate_up_mma_pass(uint16_t* hs, const uint16_t* const (&w)[2][2],
                                                     const bool (&rowOk)[2], const float* x,
                                                     const int* sortedPairs, int first, int nt,
                                                     int i0, int hidden, int inter, int topK,
                                                     uint4* buf0, uint4* buf1) {
  constexpr int CH = moe_mma_gate_up_chunks<NT>();
  const MoeMmaStageX<NT * 8, CH> stage(x, sortedPairs + first, nt, topK, hidden);
  float acc[2][NT][4];
  moe_mma_rows<2, CH, NT>(acc, w, rowOk, hidden, stage, buf0, buf1);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int row = i0 + g + (i >> 1) * 8, tok = t * 8 + 2 * q + (i & 1);
      if (row < inter && tok < nt) {
        const float gs = acc[0][t][i], us = acc[1][t][i];
        hs[static_cast<size_t>(first + tok) * inter + row] =
            f32_to_bf16_bits((gs / (1.f + expf(-gs))) * us);
      }
    }
  }
}

// Gate/up of one block (blockIdx.x: 64 intermediate rows, blockIdx.y: active expert) in passes of up
// to PT * 8 of the expert's tokens; the last (or only) pass runs on the fewest token tiles of 8 that
// hold it (1, 2, 4, then PT), so a PT = 8 kernel takes exactly the PT = 4 code for any pass of up to
// 32 tokens, and every pair gets the same per-pair mma sequence whichever pass covers it.
template <int PT>
__device__ __forceinline__ void moe_gate_up_mma_block(uint16_t* hs, const uint16_t* w13,
                                                      const float* x, const int* offsets,
                                                      const int* sortedPairs,
                                                      const int* activeExperts,
                                                      const int* activeCount, int hidden, int inter,
                                                      int topK, uint4* buf0, uint4* buf1) {
  static_assert(PT == 4 || PT == 8, "passes of 32 or 64 tokens");
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int i0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {i0 + g < inter, i0 + g + 8 < inter};
  const uint16_t* gate = w13 + static_cast<size_t>(e) * 2 * inter * hidden;
  const uint16_t* w[2][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(i0 + g + 8 * h, inter - 1);  // never read when past the end
    w[0][h] = gate + static_cast<size_t>(row) * hidden;
    w[1][h] = gate + static_cast<size_t>(inter + row) * hidden;
  }
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (nt <= 8) {
      moe_gate_up_mma_pass<1>(hs, w, rowOk, x, sortedPairs, first, nt, i0, hidden, inter, topK,
                              buf0, buf1);
    } else if (nt <= 16) {
      moe_gate_up_mma_pass<2>(hs, w, rowOk, x, sortedPairs, first, nt, i0, hidden, inter, topK,
                              buf0, buf1);
    } else if (PT == 4 || nt <= 32) {
      moe_gate_up_mma_pass<4>(hs, w, rowOk, x, sortedPairs, first, nt, i0, hidden, inter, topK,
                              buf0, buf1);
    } else {
      moe_gate_up_mma_pass<PT>(hs, w, rowOk, x, sortedPairs, first, nt, i0, hidden, inter, topK,
                               buf0, buf1);
    }
  }
}

// hs[q, i] = bf16(silu(gate_e[i] . x[t]) * (up_e[i] . x[t])) for sorted pair q of expert e,
// t = sortedPairs[q] / topK. hs: bf16 [pairs, inter] in sorted order. Needs hidden % 8 == 0.
// Passes of up to 32 tokens (decode batches).
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_gate_up_mma(uint16_t* hs, const uint16_t* w13, const float* x, const int* offsets,
                       const int* sortedPairs, const int* activeExperts, const int* activeCount,
                       int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][kMoeMmaGateUpChunks * kMoeMmaPassTokens * 4];
  moe_gate_up_mma_block<kMoeMmaTokenTiles>(hs, w13, x, offsets, sortedPairs, activeExperts,
                                           activeCount, hidden, inter, topK, xs[0], xs[1]);
}

// rm_moe_gate_up_mma in passes of up to 64 tokens (large batches): half the weight passes for an
// expert of more than 32 tokens, bit-identical results per pair.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_gate_up_mma64(uint16_t* hs, const uint16_t* w13, const float* x, const int* offsets,
                         const int* sortedPairs, const int* activeExperts, const int* activeCount,
                         int hidden, int inter, int topK) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][kMoeMmaGateUpChunks * kMoeMmaWidePassTokens * 4];
  moe_gate_up_mma_block<kMoeMmaWideTokenTiles>(hs, w13, x, offsets, sortedPairs, activeExperts,
                                               activeCount, hidden, inter, topK, xs[0], xs[1]);
}

template <int NT>
__device__ __forceinline__ void moe_down_mma_pass(float* y, const uint16_t* const (&w)[1][2],
                                                  const bool (&rowOk)[2], const uint16_t* hs,
                                                  const float* routeWeights, const int* sortedPairs,
                                                  int first, int nt, int d0, int hidden, int inter,
                                                  uint4* buf0, uint4* buf1) {
  const MoeMmaStageH<NT * 8> stage(hs, first, nt, inter);
  float acc[1][NT][4];
  moe_mma_rows<1, kMoeMmaDownChunks, NT>(acc, w, rowOk, inter, stage, buf0, buf1);
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < NT; t++) {
#pragma unroll
    for (int j = 0; j < 2; j++) {
      const int tok = t * 8 + 2 * q + j;
      if (tok < nt) {
        const int p = sortedPairs[first + tok];
        const float rw = routeWeights[p];
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int d = d0 + g + 8 * h;
          if (d < hidden) y[static_cast<size_t>(p) * hidden + d] = rw * acc[0][t][2 * h + j];
        }
      }
    }
  }
}

// Down of one block (blockIdx.x: 64 output rows, blockIdx.y: active expert) in passes of up to
// PT * 8 of the expert's tokens, split as in moe_gate_up_mma_block.
template <int PT>
__device__ __forceinline__ void moe_down_mma_block(float* y, const uint16_t* w2, const uint16_t* hs,
                                                   const float* routeWeights, const int* offsets,
                                                   const int* sortedPairs, const int* activeExperts,
                                                   const int* activeCount, int hidden, int inter,
                                                   uint4* buf0, uint4* buf1) {
  static_assert(PT == 4 || PT == 8, "passes of 32 or 64 tokens");
  if (static_cast<int>(blockIdx.y) >= *activeCount) return;
  const int e = activeExperts[blockIdx.y];
  const int g = (threadIdx.x & 31) >> 2;
  const int d0 = blockIdx.x * kMoeMmaRowsPerBlock + (threadIdx.x >> 5) * 16;
  const bool rowOk[2] = {d0 + g < hidden, d0 + g + 8 < hidden};
  const uint16_t* w[1][2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = min(d0 + g + 8 * h, hidden - 1);  // never read when past the end
    w[0][h] = w2 + (static_cast<size_t>(e) * hidden + row) * inter;
  }
  const int begin = offsets[e], end = offsets[e + 1];
  for (int first = begin; first < end; first += PT * 8) {
    const int nt = min(PT * 8, end - first);
    if (nt <= 8) {
      moe_down_mma_pass<1>(y, w, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden, inter,
                           buf0, buf1);
    } else if (nt <= 16) {
      moe_down_mma_pass<2>(y, w, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden, inter,
                           buf0, buf1);
    } else if (PT == 4 || nt <= 32) {
      moe_down_mma_pass<4>(y, w, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden, inter,
                           buf0, buf1);
    } else {
      moe_down_mma_pass<PT>(y, w, rowOk, hs, routeWeights, sortedPairs, first, nt, d0, hidden,
                            inter, buf0, buf1);
    }
  }
}

// y[p, d] = routeWeights[p] * (down_e[d] . hs[q]) for sorted pair q = p's position, y in pair order
// [pairs, hidden] f32. Needs inter % 8 == 0. Passes of up to 32 tokens (decode batches).
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_down_mma(float* y, const uint16_t* w2, const uint16_t* hs, const float* routeWeights,
                    const int* offsets, const int* sortedPairs, const int* activeExperts,
                    const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][kMoeMmaDownChunks * kMoeMmaPassTokens * 4];
  moe_down_mma_block<kMoeMmaTokenTiles>(y, w2, hs, routeWeights, offsets, sortedPairs,
                                        activeExperts, activeCount, hidden, inter, xs[0], xs[1]);
}

// rm_moe_down_mma in passes of up to 64 tokens (large batches), bit-identical results per pair.
RM_KERNEL void __launch_bounds__(kMoeMmaThreads)
    rm_moe_down_mma64(float* y, const uint16_t* w2, const uint16_t* hs, const float* routeWeights,
                      const int* offsets, const int* sortedPairs, const int* activeExperts,
                      const int* activeCount, int hidden, int inter) {
  rm_pdl_prologue();
  __shared__ uint4 xs[2][kMoeMmaDownChunks * kMoeMmaWidePassTokens * 4];
  moe_down_mma_block<kMoeMmaWideTokenTiles>(y, w2, hs, routeWeights, offsets, sortedPairs,
                                            activeExperts, activeCount, hidden, inter, xs[0],
                                            xs[1]);
}
