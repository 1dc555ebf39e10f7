package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.quant.Fp8E4m3;
import dev.ringmaster.backend.quant.Quantizers;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.SparseAttentionConfig;
import dev.ringmaster.model.ops.IndexerWeights;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.IndexerKeyCache;
import dev.ringmaster.runtime.KvCache;
import java.util.Arrays;

/**
 * The CPU's lightning indexer (DeepSeek Sparse Attention), as transformers 5.18 computes it: query
 * heads {@code q = wq_b(q_lora)}, one key {@code k = LayerNorm(wk(x))}, both rotated on their first
 * {@code qk_rope_head_dim} dims in the model's indexer layout, head weights {@code w =
 * weights_proj(x) / sqrt(heads)}, and the score of position {@code t} for a query {@code I[t] =
 * sum_h w[h] * relu(q[h] . k[t] / sqrt(index_head_dim))}. A query keeps the {@code index_topk}
 * best-scoring positions up to its own (ties: the earlier position), or every position when there
 * are no more than that. Tokens select on the model's kernel threads.
 *
 * <p>With FP8 keys ({@link SparseAttentionConfig#fp8Keys}) the cache holds each key as e4m3 codes
 * and one scale {@code ks} ({@link Quantizers#fp8Vector}), and each query head is quantized the
 * same way (codes {@code qc}, scale {@code qs}), as DeepSeek-V3.2's reference does; the score is
 * then {@code I[t] = ks[t] * sum_h (w[h] * qs[h] / sqrt(index_head_dim)) * relu(qc[h] . kc[t])}:
 * the dequantized dot products, with the positive scales taken out of the relu.
 */
final class CpuIndexer {
  /** transformers builds k_norm as {@code nn.LayerNorm(index_head_dim, eps=1e-6)}. */
  private static final double K_NORM_EPS = 1e-6;

  private final CpuKernelContext kernels;
  private final RopeTable rope;
  private final int heads;
  private final int dim;
  private final int topK;
  private final float scoreScale;
  private final float headScale;
  private final boolean fp8;

  CpuIndexer(CpuKernelContext kernels, ModelConfig cfg) {
    this.kernels = kernels;
    SparseAttentionConfig dsa = cfg.sparseAttention();
    this.rope =
        new RopeTable(cfg.rope().withInterleaved(dsa.ropeInterleaved()), cfg.qkRopeHeadDim());
    this.heads = dsa.indexHeads();
    this.dim = dsa.indexHeadDim();
    this.topK = dsa.topK();
    this.scoreScale = (float) (1.0 / Math.sqrt(dim));
    this.headScale = (float) (1.0 / Math.sqrt(heads));
    this.fp8 = dsa.fp8Keys();
  }

  /**
   * Caches the step's indexer keys for {@code layer} and selects each token's positions: {@code x}
   * is the attention input {@code [t, hidden]}, {@code qLora} the normalised query LoRA {@code [t,
   * q_lora_rank]}. Entry {@code i} of the result lists token {@code i}'s selected positions in
   * ascending order, or is null when it keeps every position up to its own.
   */
  int[][] select(
      float[] x,
      float[] qLora,
      IndexerWeights<CpuTensor> w,
      BatchLayout layout,
      KvCache[] caches,
      int layer) {
    int t = layout.numTokens();
    float[] q = new float[t * heads * dim];
    CpuTensor.linear(w.wqB()).apply(q, qLora, t);
    float[] k = new float[t * dim];
    CpuTensor.linear(w.wk()).apply(k, x, t);
    float[] gamma = CpuTensor.vector(w.kNormWeight());
    float[] beta = CpuTensor.vector(w.kNormBias());
    float[] scratch = new float[rope.dim()];
    float[] cs = new float[rope.dim()];
    for (int i = 0; i < t; i++) {
      layerNorm(k, i * dim, gamma, beta);
      rope.angles(layout.positions()[i], cs);
      rope.rotate(k, i * dim, cs, scratch);
      for (int h = 0; h < heads; h++) {
        rope.rotate(q, (i * heads + h) * dim, cs, scratch);
      }
    }
    KvCache.storeIndexerKeys(layout, caches, layer, k);
    float[] headWeights = new float[t * heads];
    CpuTensor.linear(w.weightsProj()).apply(headWeights, x, t);
    int[] seqOf = CpuMlaAttention.seqOfToken(layout);
    int[][] selected = new int[t][];
    kernels.parallelFor(
        t,
        i -> {
          int len = layout.positions()[i] + 1;
          if (len > topK) {
            selected[i] = topK(score(q, headWeights, i, caches[seqOf[i]], layer, len), topK);
          }
        });
    return selected;
  }

  /**
   * Index scores of token {@code i}'s query ({@code q [t, heads, dim]}, rotated; with FP8 keys its
   * heads are quantized in place) against positions {@code 0 .. len-1} of {@code cache}'s keys of
   * {@code layer}.
   */
  float[] score(float[] q, float[] headWeights, int i, KvCache cache, int layer, int len) {
    IndexerKeyCache keys = cache.indexerKeys();
    if (keys.fp8() != fp8) {
      throw new IllegalStateException(
          "the cache holds "
              + (keys.fp8() ? "FP8" : "f32")
              + " indexer keys but the model scores "
              + (fp8 ? "FP8" : "f32")
              + " ones: make caches with this model's newCache");
    }
    return fp8
        ? scoresFp8(q, quantizeHeads(q, i), headWeights, i, keys, layer, len)
        : scores(q, headWeights, i, keys.keys(layer), len);
  }

  /**
   * Quantizes token {@code i}'s query heads in {@code q} in place to the exact values of their e4m3
   * codes ({@link Quantizers#fp8Vector}, one scale per head); returns the heads' scales.
   */
  private float[] quantizeHeads(float[] q, int i) {
    float[] scales = new float[heads];
    byte[] codes = new byte[dim];
    for (int h = 0; h < heads; h++) {
      int off = (i * heads + h) * dim;
      scales[h] = Quantizers.fp8Vector(q, off, dim, codes, 0);
      for (int d = 0; d < dim; d++) {
        q[off + d] = Fp8E4m3.decode(codes[d]);
      }
    }
    return scales;
  }

  /**
   * {@link #scores} over FP8 keys: {@code q} holds the code values of token {@code i}'s heads and
   * {@code qScales} their scales; a key's codes are decoded exactly and its scale applied once:
   * {@code ks[s] * sum_h (w[h] * headScale * qs[h] * scale) * relu(qc[h] . kc[s])}.
   */
  private float[] scoresFp8(
      float[] q,
      float[] qScales,
      float[] headWeights,
      int i,
      IndexerKeyCache keys,
      int layer,
      int len) {
    float[] wq = new float[heads];
    for (int h = 0; h < heads; h++) {
      wq[h] = headWeights[i * heads + h] * headScale * qScales[h] * scoreScale;
    }
    byte[] codes = keys.codes(layer);
    float[] kScales = keys.scales(layer);
    float[] k = new float[dim];
    float[] out = new float[len];
    for (int s = 0; s < len; s++) {
      for (int d = 0; d < dim; d++) {
        k[d] = Fp8E4m3.decode(codes[s * dim + d]);
      }
      float sum = 0;
      for (int h = 0; h < heads; h++) {
        float dot = CpuOps.dot(q, (i * heads + h) * dim, k, 0, dim);
        sum += wq[h] * Math.max(dot, 0f);
      }
      out[s] = sum * kScales[s];
    }
    return out;
  }

  /** Index scores of token {@code i}'s query against the cached keys {@code 0..len-1}. */
  private float[] scores(float[] q, float[] headWeights, int i, float[] keys, int len) {
    float[] out = new float[len];
    for (int s = 0; s < len; s++) {
      float sum = 0;
      for (int h = 0; h < heads; h++) {
        float dot = CpuOps.dot(q, (i * heads + h) * dim, keys, s * dim, dim) * scoreScale;
        sum += headWeights[i * heads + h] * headScale * Math.max(dot, 0f);
      }
      out[s] = sum;
    }
    return out;
  }

  /**
   * The {@code k} positions of the highest scores, ties to the earlier position, in ascending
   * order.
   */
  static int[] topK(float[] scores, int k) {
    int n = scores.length;
    long[] keys = new long[n];
    for (int s = 0; s < n; s++) {
      // Order by descending score, then ascending position; +0f folds -0 into +0.
      int bits = Float.floatToIntBits(scores[s] + 0f);
      int ascending = bits < 0 ? bits ^ 0x7fffffff : bits;
      keys[s] = ((long) ~ascending << 32) | s;
    }
    Arrays.sort(keys);
    int[] out = new int[k];
    for (int j = 0; j < k; j++) {
      out[j] = (int) keys[j];
    }
    Arrays.sort(out);
    return out;
  }

  private void layerNorm(float[] x, int off, float[] gamma, float[] beta) {
    float mean = 0;
    for (int d = 0; d < dim; d++) {
      mean += x[off + d];
    }
    mean /= dim;
    float var = 0;
    for (int d = 0; d < dim; d++) {
      float c = x[off + d] - mean;
      var += c * c;
    }
    var /= dim;
    float inv = (float) (1.0 / Math.sqrt(var + K_NORM_EPS));
    for (int d = 0; d < dim; d++) {
      x[off + d] = (x[off + d] - mean) * inv * gamma[d] + beta[d];
    }
  }
}
