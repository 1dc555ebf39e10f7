// DeepSeek Sparse Attention: the tiled tensor-core indexer score kernels, kept as the reference the
// streaming kernels (rm_indexer_scores_mma, rm_indexer_scores_fp8_mma) must match bit for bit
// (DsaScoresEqualityGpuTest) and as the A/B row of DsaBench; DsaKernels runs them only where a test
// or the bench asks (useTiledScoreKernels). Per block step a tile of 64 positions, two key buffers,
// the 64 x N dot tile through shared memory behind a block barrier, threads 0..63 reducing heads.
#pragma once
#include "dsa_indexer_fp8.cu"

constexpr int kIdxTiledTile = 64;  // positions per block step
constexpr int kIdxTiledThreads = 256;

// Shared-memory layout of rm_indexer_scores_mma_tiled in bytes (parts 128-byte aligned; DsaKernels
// mirrors it): the query's high and residual bf16 parts [N][dim + 8] (N = heads rounded up to 16,
// zero rows past heads), two key tiles [64][dim + 8] bf16, the f32 dot tile [64][N + 4] and the
// head weights [N].
struct IdxTiledSmem {
  int ldk, ldc, n, qHi, qLo, keys, keyStride, dots, weights, total;
  __host__ __device__ IdxTiledSmem(int heads, int dim) {
    auto up = [](int b) { return (b + 127) & ~127; };
    n = (heads + 15) & ~15;
    ldk = dim + 8;
    ldc = n + 4;
    qHi = 0;
    qLo = qHi + up(n * ldk * 2);
    keys = qLo + up(n * ldk * 2);
    keyStride = up(kIdxTiledTile * ldk * 2);
    dots = keys + 2 * keyStride;
    weights = dots + up(kIdxTiledTile * ldc * 4);
    total = weights + n * 4;
  }
};

// Starts copying the indexer keys of positions p0 .. p0+63 (zeros from len on) into ks, as one
// cp.async group.
__device__ __forceinline__ void idx_tiled_issue_keys(__nv_bfloat16* ks, int ldk,
                                                     const uint16_t* keys, const int* table,
                                                     int p0, int len, int dim, int blockSize) {
  const int vecPerRow = dim / 8;
  for (int i = threadIdx.x; i < kIdxTiledTile * vecPerRow; i += blockDim.x) {
    const int row = i / vecPerRow, c = i - row * vecPerRow, p = p0 + row;
    const bool ok = p < len;
    const uint16_t* src =
        ok ? keys + (static_cast<size_t>(table[p / blockSize]) * blockSize + p % blockSize) * dim
           : keys;
    mla_cp_async16(ks + row * ldk + 8 * c, src + 8 * c, ok);
  }
  mla_cp_async_commit();
}

// rm_indexer_scores_mma's scores, the same bits (the query in two bf16 parts, the same WMMA k order
// per 16 x 16 tile, the same head-order reduction). Mapping: grid (position blocks, rows), 8 warps;
// a block exits at once when its first tile lies past the row's context, else stages the row's
// query and weights and strides over tiles of 64 positions by the grid: the tile's key rows arrive
// by cp.async (zeros past the context; the next tile's copy overlaps this tile's math), warps
// compute the 64 x N dot tile by WMMA (tile w, w+8, ...: 16 positions x 16 heads, hi then lo per k
// step), and threads 0..63 reduce their position's heads in head order.
RM_KERNEL void __launch_bounds__(kIdxTiledThreads)
    rm_indexer_scores_mma_tiled(float* scores, int ldScores, const float* q, const float* w,
                                const uint16_t* keys, const int* blockTable, int maxBlocksPerSeq,
                                const int* tokenSeq, const int* tokenPos, int rowBase, int heads,
                                int dim, int blockSize, float scale, float headScale) {
  rm_pdl_prologue();
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char idxTiledSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  if (blockIdx.x * kIdxTiledTile >= len) return;
  const IdxTiledSmem L(heads, dim);
  __nv_bfloat16* qHi = reinterpret_cast<__nv_bfloat16*>(idxTiledSmem + L.qHi);
  __nv_bfloat16* qLo = reinterpret_cast<__nv_bfloat16*>(idxTiledSmem + L.qLo);
  auto keyTile = [&](int buf) {
    return reinterpret_cast<__nv_bfloat16*>(idxTiledSmem + L.keys + buf * L.keyStride);
  };
  float* dots = reinterpret_cast<float*>(idxTiledSmem + L.dots);
  float* ws = reinterpret_cast<float*>(idxTiledSmem + L.weights);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * kIdxTiledTile;
  idx_tiled_issue_keys(keyTile(0), L.ldk, keys, table, blockIdx.x * kIdxTiledTile, len, dim,
                       blockSize);
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
  for (int i = threadIdx.x; i < L.n * dim; i += blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    const float v = h < heads ? qr[i] : 0.f;
    const uint16_t hi = f32_to_bf16_bits(v);
    qHi[h * L.ldk + d] = __ushort_as_bfloat16(hi);
    qLo[h * L.ldk + d] = __ushort_as_bfloat16(f32_to_bf16_bits(v - bf16_bits_to_f32(hi)));
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    ws[h] = h < heads ? w[static_cast<size_t>(t) * heads + h] * headScale : 0.f;
  }
  float* out = scores + static_cast<size_t>(r) * ldScores;
  const int warp = threadIdx.x >> 5;
  const int nTiles = L.n / 16, tiles = (kIdxTiledTile / 16) * nTiles;
  int buf = 0;
  for (int p0 = blockIdx.x * kIdxTiledTile; p0 < len; p0 += step, buf ^= 1) {
    __syncthreads();  // the other key buffer and the dots are no longer read (the query is staged)
    if (p0 + step < len) {
      idx_tiled_issue_keys(keyTile(buf ^ 1), L.ldk, keys, table, p0 + step, len, dim, blockSize);
      mla_cp_async_wait<1>();  // this tile's group is complete, the next one may still run
    } else {
      mla_cp_async_wait<0>();
    }
    __syncthreads();
    const __nv_bfloat16* ks = keyTile(buf);
    for (int tile = warp; tile < tiles; tile += kIdxTiledThreads / 32) {
      const int m = tile % (kIdxTiledTile / 16), n = tile / (kIdxTiledTile / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.f);
      for (int k0 = 0; k0 < dim; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(a, ks + 16 * m * L.ldk + k0, L.ldk);
        wmma::load_matrix_sync(b, qHi + 16 * n * L.ldk + k0, L.ldk);
        wmma::mma_sync(c, a, b, c);
        wmma::load_matrix_sync(b, qLo + 16 * n * L.ldk + k0, L.ldk);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(dots + 16 * m * L.ldc + 16 * n, c, L.ldc, wmma::mem_row_major);
    }
    __syncthreads();
    if (threadIdx.x < kIdxTiledTile && p0 + threadIdx.x < len) {
      const float* dr = dots + threadIdx.x * L.ldc;
      float sum = 0.f;
      for (int h = 0; h < heads; h++) sum += ws[h] * fmaxf(dr[h] * scale, 0.f);
      out[p0 + threadIdx.x] = sum;
    }
  }
}

// Shared-memory layout of rm_indexer_scores_fp8_mma_tiled in bytes (parts 128-byte aligned;
// DsaKernels mirrors it): the query codes as bf16 [N][dim + 8], two raw e4m3 key tiles [64][dim],
// the tile's keys as bf16 [64][dim + 8], the f32 dot tile [64][N + 4] and the head weights [N].
struct IdxFp8TiledSmem {
  int ldk, ldc, n, q, raw, rawStride, keys, dots, weights, total;
  __host__ __device__ IdxFp8TiledSmem(int heads, int dim) {
    auto up = [](int b) { return (b + 127) & ~127; };
    n = (heads + 15) & ~15;
    ldk = dim + 8;
    ldc = n + 4;
    q = 0;
    raw = q + up(n * ldk * 2);
    rawStride = up(kIdxTiledTile * dim);
    keys = raw + 2 * rawStride;
    dots = keys + up(kIdxTiledTile * ldk * 2);
    weights = dots + up(kIdxTiledTile * ldc * 4);
    total = weights + n * 4;
  }
};

// Starts copying the codes of positions p0 .. p0+63 (zeros from len on) into raw ([64][dim]
// bytes), as one cp.async group.
__device__ __forceinline__ void idx_tiled_issue_fp8_keys(uint8_t* raw, const uint8_t* codes,
                                                         const int* table, int p0, int len,
                                                         int dim, int blockSize) {
  const int vecPerRow = dim / 16;
  for (int i = threadIdx.x; i < kIdxTiledTile * vecPerRow; i += blockDim.x) {
    const int row = i / vecPerRow, c = i - row * vecPerRow, p = p0 + row;
    const bool ok = p < len;
    const uint8_t* src = ok ? codes + idx_slot(table, p, blockSize) * dim : codes;
    mla_cp_async16(raw + row * dim + 16 * c, src + 16 * c, ok);
  }
  mla_cp_async_commit();
}

// rm_indexer_scores_fp8_mma's scores, the same bits. Mapping as rm_indexer_scores_mma_tiled; per
// tile of 64 positions the raw codes arrive by cp.async (the next tile's copy overlaps this tile's
// work), are widened to bf16 in shared memory, warps compute the 64 x N dot tile by WMMA, and
// threads 0..63 reduce their position's heads in head order: ks[p] * sum_h ws[h] * relu(dot).
RM_KERNEL void __launch_bounds__(kIdxTiledThreads)
    rm_indexer_scores_fp8_mma_tiled(float* scores, int ldScores, const float* q,
                                    const float* qScale, const float* w, const uint8_t* codes,
                                    const float* kScales, const int* blockTable,
                                    int maxBlocksPerSeq, const int* tokenSeq, const int* tokenPos,
                                    int rowBase, int heads, int dim, int blockSize, float scale,
                                    float headScale) {
  rm_pdl_prologue();
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char idxFp8TiledSmem[];
  const int r = blockIdx.y, t = rowBase + r;
  const int len = tokenPos[t] + 1;
  if (blockIdx.x * kIdxTiledTile >= len) return;
  const IdxFp8TiledSmem L(heads, dim);
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(idxFp8TiledSmem + L.q);
  auto rawTile = [&](int buf) { return idxFp8TiledSmem + L.raw + buf * L.rawStride; };
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(idxFp8TiledSmem + L.keys);
  float* dots = reinterpret_cast<float*>(idxFp8TiledSmem + L.dots);
  float* ws = reinterpret_cast<float*>(idxFp8TiledSmem + L.weights);
  const int* table = blockTable + static_cast<size_t>(tokenSeq[t]) * maxBlocksPerSeq;
  const int step = gridDim.x * kIdxTiledTile;
  idx_tiled_issue_fp8_keys(rawTile(0), codes, table, blockIdx.x * kIdxTiledTile, len, dim,
                           blockSize);
  const float* qr = q + static_cast<size_t>(t) * heads * dim;
  for (int i = threadIdx.x; i < L.n * dim; i += blockDim.x) {
    const int h = i / dim, d = i - h * dim;
    qs[h * L.ldk + d] = __float2bfloat16_rn(h < heads ? qr[i] : 0.f);
  }
  for (int h = threadIdx.x; h < L.n; h += blockDim.x) {
    const size_t th = static_cast<size_t>(t) * heads + h;
    ws[h] = h < heads ? w[th] * headScale * qScale[th] * scale : 0.f;
  }
  float* out = scores + static_cast<size_t>(r) * ldScores;
  const int warp = threadIdx.x >> 5;
  const int nTiles = L.n / 16, tiles = (kIdxTiledTile / 16) * nTiles;
  const int vecPerRow = dim / 8;
  int buf = 0;
  for (int p0 = blockIdx.x * kIdxTiledTile; p0 < len; p0 += step, buf ^= 1) {
    __syncthreads();  // the other raw tile, the bf16 keys and the dots are no longer read
    if (p0 + step < len) {
      idx_tiled_issue_fp8_keys(rawTile(buf ^ 1), codes, table, p0 + step, len, dim, blockSize);
      mla_cp_async_wait<1>();  // this tile's group is complete, the next one may still run
    } else {
      mla_cp_async_wait<0>();
    }
    __syncthreads();
    const uint8_t* raw = rawTile(buf);
    for (int i = threadIdx.x; i < kIdxTiledTile * vecPerRow; i += blockDim.x) {
      const int row = i / vecPerRow, c = i - row * vecPerRow;
      const uint2 v = *reinterpret_cast<const uint2*>(raw + row * dim + 8 * c);
      float f[8];
      e4m3x4_to_f32(v.x, f);
      e4m3x4_to_f32(v.y, f + 4);
      uint4 packed;
      packed.x = f32_to_bf16_bits(f[0]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[1])) << 16);
      packed.y = f32_to_bf16_bits(f[2]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[3])) << 16);
      packed.z = f32_to_bf16_bits(f[4]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[5])) << 16);
      packed.w = f32_to_bf16_bits(f[6]) | (static_cast<uint32_t>(f32_to_bf16_bits(f[7])) << 16);
      *reinterpret_cast<uint4*>(ks + row * L.ldk + 8 * c) = packed;
    }
    __syncthreads();
    for (int tile = warp; tile < tiles; tile += kIdxTiledThreads / 32) {
      const int m = tile % (kIdxTiledTile / 16), n = tile / (kIdxTiledTile / 16);
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      wmma::fill_fragment(c, 0.f);
      for (int k0 = 0; k0 < dim; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(a, ks + 16 * m * L.ldk + k0, L.ldk);
        wmma::load_matrix_sync(b, qs + 16 * n * L.ldk + k0, L.ldk);
        wmma::mma_sync(c, a, b, c);
      }
      wmma::store_matrix_sync(dots + 16 * m * L.ldc + 16 * n, c, L.ldc, wmma::mem_row_major);
    }
    __syncthreads();
    const int p = p0 + threadIdx.x;
    if (threadIdx.x < kIdxTiledTile && p < len) {
      const float* dr = dots + threadIdx.x * L.ldc;
      float sum = 0.f;
      for (int h = 0; h < heads; h++) sum += ws[h] * fmaxf(dr[h], 0.f);
      out[p] = sum * kScales[idx_slot(table, p, blockSize)];
    }
  }
}
