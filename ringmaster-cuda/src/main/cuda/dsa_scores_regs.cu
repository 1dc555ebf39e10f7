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

// Bulk (TMA) copies of key rows, completed on an mbarrier (sm_90+). A stage's rows arrive by one
// cp.async.bulk each, global -> shared, and its barrier's transaction count tracks their bytes; the
// barrier is the warp's own (count 1: the lane that announces the bytes is its only arrival).
__device__ __forceinline__ uint32_t idx_smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Initialises a warp's barriers (one per stage) and makes them visible to the async proxy; lane 0
// alone, then the warp's lanes sync before any copy names them.
__device__ __forceinline__ void idx_mbar_init(uint64_t* bars, int count) {
  if ((threadIdx.x & 31) == 0) {
    for (int i = 0; i < count; i++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(idx_smem_addr(bars + i))
                   : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncwarp();
}

// Orders this thread's earlier generic-proxy accesses of shared memory (ldmatrix reads, zero
// stores) before later async-proxy ones (a bulk copy into the same stage).
__device__ __forceinline__ void idx_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Blocks until the barrier's phase of parity `parity` has completed: its bytes have landed and
// are visible to this thread (acquire).
__device__ __forceinline__ void idx_mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t a = idx_smem_addr(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (done == 0);
}

// Starts a warp's bulk copies of the key rows of positions p0 .. p0+31 into a stage (row stride
// ldk elements), for blockSize % 32 == 0 (the 32 rows are consecutive in the cache) and dim * 2 a
// multiple of 16: lane i copies row i (dim * 2 bytes, 16-byte aligned at both ends) and lane 0
// announces exactly the bytes copied; rows from len on are zeroed by shared stores instead. Nothing
// from len on (that stage is never waited for).
__device__ __forceinline__ void idx_warp_issue_keys_bulk(unsigned char* stage, uint64_t* bar,
                                                         int ldk, const uint16_t* keys,
                                                         const int* table, int p0, int len,
                                                         int dim, int blockSize) {
  if (p0 >= len) return;
  const int lane = threadIdx.x & 31;
  const int rowBytes = dim * 2, rows = min(kIdxWarpRows, len - p0);
  const uint32_t b = idx_smem_addr(bar);
  if (lane == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b),
                 "r"(static_cast<uint32_t>(rows * rowBytes))
                 : "memory");
  }
  unsigned char* dst = stage + lane * ldk * 2;
  if (lane < rows) {
    const size_t slot = static_cast<size_t>(table[p0 / blockSize]) * blockSize + p0 % blockSize;
    const unsigned char* src =
        reinterpret_cast<const unsigned char*>(keys) + (slot + lane) * rowBytes;
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
        ::"r"(idx_smem_addr(dst)), "l"(src), "r"(rowBytes), "r"(b)
        : "memory");
  } else {
    for (int c = 0; c < rowBytes; c += 16) {
      *reinterpret_cast<uint4*>(dst + c) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// One warp's stream of rm_indexer_scores_mma_regs over its positions first, first + step, ...
// (kFull: dim 128 and 25..32 heads, every tile bound known at compile time). Loads the warp's
// query fragments (col-major 16 x 8 B tiles: head lane / 4, k pairs 2 (lane % 4) and + 8) from the
// staged parts [head][k] once; per step reads its key tile by ldmatrix, accumulates each 16 x 8
// dot tile over the k steps in order, hi then lo per step, from zero (the order idx_warp_dots
// gives each half of a WMMA tile), writes the dots over the tile in idx_warp_dots's layout and
// reduces them with idx_reduce_heads, as rm_indexer_scores_mma does; kQuad instead sums each
// lane's 8 heads of its 4 positions from the accumulators and the quad's 4 lanes by shuffles.
// kBulk (with kQuad): the key tiles come by idx_warp_issue_keys_bulk, each stage's completion
// on its barrier in bars (phase parity flipping per reuse), instead of cp.async groups.
template <bool kFull, bool kQuad, bool kBulk = false>
__device__ __forceinline__ void idx_regs_stream(float* out, const IdxMmaSmem& L,
                                                const __nv_bfloat16* qHi, const __nv_bfloat16* qLo,
                                                const float* ws, unsigned char* ring,
                                                const int* table, const uint16_t* keys, int len,
                                                int first, int step, int heads, int dim,
                                                int blockSize, float scale, uint64_t* bars) {
  static_assert(!kBulk || kQuad, "the bulk copies reuse a stage only after the quad reduction");
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
    const int next = (i + kIdxBf16Stages - 1) % kIdxBf16Stages;
    if constexpr (kBulk) {
      // this step's rows have landed (each lane's acquire), and the zeroed ones are visible
      idx_mbar_wait(bars + i % kIdxBf16Stages, (i / kIdxBf16Stages) & 1);
      __syncwarp();
      idx_warp_issue_keys_bulk(ring + next * L.stage, bars + next, L.ldk, keys, table,
                               p0 + (kIdxBf16Stages - 1) * step, len, dim, blockSize);
    } else {
      mla_cp_async_wait<kIdxBf16Stages - 2>();  // this step's group is complete
      __syncwarp();                             // and visible to the whole warp
      idx_warp_issue_keys(ring + next * L.stage, L.ldk, keys, table,
                          p0 + (kIdxBf16Stages - 1) * step, len, dim, blockSize);
    }
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
      if constexpr (kBulk) idx_fence_proxy_async();  // the reads before a later bulk copy's writes
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
// 2: 128 registers for 32 x 128). kBulk (rm_indexer_scores_mma_bulk): where blockSize % 32 == 0
// and dim * 2 % 16 == 0 the key tiles come by bulk copies, each warp's kIdxBf16Stages barriers
// (8 bytes each) after IdxMmaSmem's total; elsewhere by cp.async as without it.
template <bool kQuad, bool kBulk = false>
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
  const bool bulk = kBulk && blockSize % kIdxWarpRows == 0 && dim * 2 % 16 == 0;
  uint64_t* bars = reinterpret_cast<uint64_t*>(idxRegSmem + L.total) + warp * kIdxBf16Stages;
  if (bulk) idx_mbar_init(bars, kIdxBf16Stages);
  // The first stages' copies run while the block stages the query.
  for (int i = 0; i < kIdxBf16Stages - 1; i++) {
    if (bulk) {
      idx_warp_issue_keys_bulk(ring + i * L.stage, bars + i, L.ldk, keys, table, first + i * step,
                               len, dim, blockSize);
    } else {
      idx_warp_issue_keys(ring + i * L.stage, L.ldk, keys, table, first + i * step, len, dim,
                          blockSize);
    }
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
  const bool full = dim == 16 * kIdxRegKSteps && heads > 8 * (kIdxRegN8 - 1);
  if (bulk && full) {
    idx_regs_stream<true, kQuad, kBulk>(out, L, qHi, qLo, ws, ring, table, keys, len, first, step,
                                        heads, dim, blockSize, scale, bars);
  } else if (bulk) {
    idx_regs_stream<false, kQuad, kBulk>(out, L, qHi, qLo, ws, ring, table, keys, len, first,
                                         step, heads, dim, blockSize, scale, bars);
  } else if (full) {
    idx_regs_stream<true, kQuad>(out, L, qHi, qLo, ws, ring, table, keys, len, first, step,
                                 heads, dim, blockSize, scale, nullptr);
  } else {
    idx_regs_stream<false, kQuad>(out, L, qHi, qLo, ws, ring, table, keys, len, first, step,
                                  heads, dim, blockSize, scale, nullptr);
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

// rm_indexer_scores_mma_quad with its key tiles by bulk (TMA) copies, one per key row of dim * 2
// bytes into the padded stage row, completed on an mbarrier per stage and warp, instead of 16-byte
// cp.async copies (idx_scores_regs' kBulk): the same MMAs and head sums, so the same bits as
// rm_indexer_scores_mma_quad. Shared memory: IdxMmaSmem's total plus 8 bytes per stage and warp
// (DsaLaunchShapes.scoreBulkSharedBytes). Where blockSize % 32 != 0 it copies by cp.async.
RM_KERNEL void __launch_bounds__(kIdxScoreMaxWarps * 32, 1)
    rm_indexer_scores_mma_bulk(float* scores, int ldScores, const float* q, const float* w,
                               const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                               const int* tokenSeq, const int* tokenPos, int rowBase, int heads,
                               int dim, int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  idx_scores_regs<true, true>(scores, ldScores, q, w, keys, blockTable, maxBlocksPerSeq, tokenSeq,
                              tokenPos, rowBase, heads, dim, blockSize, scale, headScale);
}
