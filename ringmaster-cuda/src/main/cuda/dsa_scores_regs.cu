// DeepSeek Sparse Attention: the bf16 indexer scores with the query's tensor-core operands held in
// registers (rm_indexer_scores_mma_regs), for heads <= 32 and dim <= 128 (GLM-5's indexer: 32 x
// 128). rm_indexer_scores_mma re-reads the query's WMMA fragments from shared memory for every 32
// keys, twice the key bytes; here each warp loads them once, so a step's shared-memory traffic is
// the key tile, its dots and their reduction. The scores are rm_indexer_scores_mma's bits
// (DsaScoresEqualityGpuTest): the same staged query parts, the same m16n8k16 products accumulated
// in the same order (WMMA's 16x16x16 tile is two of them), the same head reduction.
#pragma once
#include "dsa_indexer.cu"

constexpr int kIdxRegKSteps = 8;  // dim <= 128: k steps of 16 whose query fragments are held
constexpr int kIdxRegN8 = 4;      // heads <= 32: 8-head MMA tiles whose fragments are held

// a[0..3] = the 16 x 16 bf16 A fragment of mma.m16n8k16 at p (row-major, row stride ld elements):
// lane l points at row l % 16, column 8 * (l / 16).
__device__ __forceinline__ void idx_ldsm_a(uint32_t (&a)[4], const __nv_bfloat16* tile, int ld) {
  const int lane = threadIdx.x & 31;
  const uint32_t p =
      static_cast<uint32_t>(__cvta_generic_to_shared(tile + (lane & 15) * ld + 8 * (lane >> 4)));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(p)
               : "memory");
}

// d += A (16 x 16 bf16) * B (16 x 8 bf16, col-major fragments b0, b1), f32 accumulation.
__device__ __forceinline__ void idx_mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                              uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One warp's stream of rm_indexer_scores_mma_regs over its positions first, first + step, ...
// (kFull: dim 128 and 25..32 heads, every tile bound known at compile time). Loads the warp's
// query fragments (col-major 16 x 8 B tiles: head lane / 4, k pairs 2 (lane % 4) and + 8) from the
// staged parts [head][k] once; per step reads its key tile by ldmatrix, accumulates each 16 x 8
// dot tile over the k steps in order, hi then lo per step, from zero (the order idx_warp_dots
// gives each half of a WMMA tile), writes the dots over the tile in idx_warp_dots's layout and
// reduces them with idx_reduce_heads, as rm_indexer_scores_mma does; kQuad instead sums each
// lane's 8 heads of its 4 positions from the accumulators and the quad's 4 lanes by shuffles.
template <bool kFull, bool kQuad>
__device__ __forceinline__ void idx_regs_stream(float* out, const IdxMmaSmem& L,
                                                const __nv_bfloat16* qHi, const __nv_bfloat16* qLo,
                                                const float* ws, unsigned char* ring,
                                                const int* table, const uint16_t* keys, int len,
                                                int first, int step, int heads, int dim,
                                                int blockSize, float scale) {
  const int lane = threadIdx.x & 31;
  const int kSteps = kFull ? kIdxRegKSteps : dim / 16;
  const int n8 = kFull ? kIdxRegN8 : (heads + 7) / 8;
  const int g = lane >> 2, c = 2 * (lane & 3);
  uint32_t bHi[kIdxRegKSteps][kIdxRegN8][2], bLo[kIdxRegKSteps][kIdxRegN8][2];
#pragma unroll
  for (int k = 0; k < kIdxRegKSteps; k++) {
#pragma unroll
    for (int n = 0; n < kIdxRegN8; n++) {
#pragma unroll
      for (int j = 0; j < 2; j++) {
        const int at = (8 * n + g) * L.ldk + 16 * k + c + 8 * j;
        const bool in = k < kSteps && n < n8;
        bHi[k][n][j] = in ? *reinterpret_cast<const uint32_t*>(qHi + at) : 0u;
        bLo[k][n][j] = in ? *reinterpret_cast<const uint32_t*>(qLo + at) : 0u;
      }
    }
  }
  // kQuad: this lane's head weights (zero past heads), held for the whole stream.
  float wq[kIdxRegN8][2];
#pragma unroll
  for (int n = 0; n < kIdxRegN8; n++) {
#pragma unroll
    for (int j = 0; j < 2; j++) wq[n][j] = kQuad && n < n8 ? ws[8 * n + c + j] : 0.f;
  }
  int i = 0;
  for (int p0 = first; p0 < len; p0 += step, i++) {
    mla_cp_async_wait<kIdxBf16Stages - 2>();  // this step's group is complete
    __syncwarp();                             // and visible to the whole warp
    idx_warp_issue_keys(ring + (i + kIdxBf16Stages - 1) % kIdxBf16Stages * L.stage, L.ldk, keys,
                        table, p0 + (kIdxBf16Stages - 1) * step, len, dim, blockSize);
    unsigned char* stage = ring + i % kIdxBf16Stages * L.stage;
    const __nv_bfloat16* ks = reinterpret_cast<const __nv_bfloat16*>(stage);
    float acc[kIdxWarpMTiles][kIdxRegN8][4];
#pragma unroll
    for (int m = 0; m < kIdxWarpMTiles; m++) {
#pragma unroll
      for (int n = 0; n < kIdxRegN8; n++) {
#pragma unroll
        for (int j = 0; j < 4; j++) acc[m][n][j] = 0.f;
      }
    }
#pragma unroll
    for (int k = 0; k < kIdxRegKSteps; k++) {
      if (k < kSteps) {
        uint32_t a[kIdxWarpMTiles][4];
#pragma unroll
        for (int m = 0; m < kIdxWarpMTiles; m++) {
          idx_ldsm_a(a[m], ks + 16 * m * L.ldk + 16 * k, L.ldk);
        }
#pragma unroll
        for (int n = 0; n < kIdxRegN8; n++) {
          if (n < n8) {
#pragma unroll
            for (int m = 0; m < kIdxWarpMTiles; m++) {
              idx_mma_16816(acc[m][n], a[m], bHi[k][n][0], bHi[k][n][1]);
            }
#pragma unroll
            for (int m = 0; m < kIdxWarpMTiles; m++) {
              idx_mma_16816(acc[m][n], a[m], bLo[k][n][0], bLo[k][n][1]);
            }
          }
        }
      }
    }
    if constexpr (kQuad) {
      // The head reduction in registers: this lane's 8 heads (8n + c, + 1) of its 4 positions
      // (16m + g, + 8), then the quad's 4 lanes (lane % 4) summed by two butterfly steps.
      float part[kIdxWarpMTiles][2];
#pragma unroll
      for (int m = 0; m < kIdxWarpMTiles; m++) {
        part[m][0] = 0.f;
        part[m][1] = 0.f;
#pragma unroll
        for (int n = 0; n < kIdxRegN8; n++) {
#pragma unroll
          for (int j = 0; j < 2; j++) {
            part[m][0] += wq[n][j] * fmaxf(acc[m][n][j] * scale, 0.f);
            part[m][1] += wq[n][j] * fmaxf(acc[m][n][2 + j] * scale, 0.f);
          }
        }
#pragma unroll
        for (int j = 0; j < 2; j++) {
          part[m][j] += __shfl_xor_sync(0xffffffffu, part[m][j], 1);
          part[m][j] += __shfl_xor_sync(0xffffffffu, part[m][j], 2);
        }
      }
      // Lane 4g + q writes position 16 (q / 2) + g + 8 (q % 2): the quad's four sums.
      const int q = lane & 3;
      const float sum =
          q == 0 ? part[0][0] : q == 1 ? part[0][1] : q == 2 ? part[1][0] : part[1][1];
      const int p = p0 + 16 * (q >> 1) + g + 8 * (q & 1);
      if (p < len) out[p] = sum;
      __syncwarp();  // every lane's reads of the key tile are done: a later copy may overwrite it
    } else {
      __syncwarp();  // every lane's reads of the key tile are done: the dots may overwrite it
      float* dots = reinterpret_cast<float*>(stage);
#pragma unroll
      for (int m = 0; m < kIdxWarpMTiles; m++) {
#pragma unroll
        for (int n = 0; n < kIdxRegN8; n++) {
          if (n < n8) {
            float* d = dots + (16 * m + g) * L.ldc + 8 * n + c;
            *reinterpret_cast<float2*>(d) = make_float2(acc[m][n][0], acc[m][n][1]);
            *reinterpret_cast<float2*>(d + 8 * L.ldc) = make_float2(acc[m][n][2], acc[m][n][3]);
          }
        }
      }
      __syncwarp();
      const float sum = idx_reduce_heads<true>(dots + lane * L.ldc, ws, heads, scale);
      if (p0 + lane < len) out[p0 + lane] = sum;
      __syncwarp();  // the stage is read: a later step's copy may overwrite it
    }
  }
}

// rm_indexer_scores_mma with the query's B fragments in registers: the same contract, arguments,
// grid, block (blockDim.x / 32 warps) and shared memory (IdxMmaSmem), for dim % 16 == 0, dim <=
// 128 and heads <= 32 (DsaKernels takes rm_indexer_scores_mma elsewhere). The block stages the
// query's parts and weights as rm_indexer_scores_mma does, then each warp streams its positions
// (idx_regs_stream) with its fragments of them in registers (two parts x k steps x 8-head tiles x
// 2: 128 registers for 32 x 128).
template <bool kQuad>
__device__ __forceinline__ void idx_scores_regs(float* scores, int ldScores, const float* q,
                                                const float* w, const uint16_t* keys,
                                                const int* blockTable, int maxBlocksPerSeq,
                                                const int* tokenSeq, const int* tokenPos,
                                                int rowBase, int heads, int dim, int blockSize,
                                                float scale, float headScale) {
  extern __shared__ __align__(128) unsigned char idxRegSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5;
  if (blockIdx.x * warps * kIdxWarpRows >= len) return;
  const IdxMmaSmem L(heads, dim, warps);
  __nv_bfloat16* qHi = reinterpret_cast<__nv_bfloat16*>(idxRegSmem + L.qHi);
  __nv_bfloat16* qLo = reinterpret_cast<__nv_bfloat16*>(idxRegSmem + L.qLo);
  float* ws = reinterpret_cast<float*>(idxRegSmem + L.weights);
  unsigned char* ring = idxRegSmem + L.ring + warp * kIdxBf16Stages * L.stage;
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * warps * kIdxWarpRows;
  const int first = (blockIdx.x * warps + warp) * kIdxWarpRows;
  // The first stages' copies run while the block stages the query.
  for (int i = 0; i < kIdxBf16Stages - 1; i++) {
    idx_warp_issue_keys(ring + i * L.stage, L.ldk, keys, table, first + i * step, len, dim,
                        blockSize);
  }
  // The query's parts and weights exactly as rm_indexer_scores_mma stages them.
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
#pragma unroll 4
  for (int i = 4 * threadIdx.x; i < L.n * dim; i += 4 * blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    const float4 v4 = h < heads ? *reinterpret_cast<const float4*>(qr + i) : float4{0, 0, 0, 0};
    const float v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const uint16_t hi = f32_to_bf16_bits(v[j]);
      qHi[h * L.ldk + d + j] = __ushort_as_bfloat16(hi);
      qLo[h * L.ldk + d + j] = __ushort_as_bfloat16(f32_to_bf16_bits(v[j] - bf16_bits_to_f32(hi)));
    }
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    ws[h] = h < heads ? w[static_cast<size_t>(t) * heads + h] * headScale : 0.f;
  }
  __syncthreads();  // the only block barrier: the query and weights are staged
  float* out = scores + static_cast<size_t>(r) * ldScores;
  if (dim == 16 * kIdxRegKSteps && heads > 8 * (kIdxRegN8 - 1)) {
    idx_regs_stream<true, kQuad>(out, L, qHi, qLo, ws, ring, table, keys, len, first, step,
                                 heads, dim, blockSize, scale);
  } else {
    idx_regs_stream<false, kQuad>(out, L, qHi, qLo, ws, ring, table, keys, len, first, step,
                                  heads, dim, blockSize, scale);
  }
}

RM_KERNEL void __launch_bounds__(kIdxScoreMaxWarps * 32, 1)
    rm_indexer_scores_mma_regs(float* scores, int ldScores, const float* q, const float* w,
                               const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                               const int* tokenSeq, const int* tokenPos, int rowBase, int heads,
                               int dim, int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  idx_scores_regs<false>(scores, ldScores, q, w, keys, blockTable, maxBlocksPerSeq, tokenSeq,
                         tokenPos, rowBase, heads, dim, blockSize, scale, headScale);
}

// rm_indexer_scores_mma_regs with the head reduction in registers (idx_regs_stream's kQuad): no
// dots through shared memory. Each score sums its heads in another order (per lane 8 heads, then
// the quad's 4 lanes), so its bits differ from rm_indexer_scores_mma's by f32 rounding; they are
// the same for every batch and grid.
RM_KERNEL void __launch_bounds__(kIdxScoreMaxWarps * 32, 1)
    rm_indexer_scores_mma_quad(float* scores, int ldScores, const float* q, const float* w,
                               const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                               const int* tokenSeq, const int* tokenPos, int rowBase, int heads,
                               int dim, int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  idx_scores_regs<true>(scores, ldScores, q, w, keys, blockTable, maxBlocksPerSeq, tokenSeq,
                        tokenPos, rowBase, heads, dim, blockSize, scale, headScale);
}
