package dev.ringmaster.model.arch;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.stream.IntStream;

/**
 * Grouped-query attention with per-head RMSNorm of queries and keys before the rotation
 * (Qwen3-MoE). The cache holds rotated keys and values of the KV heads.
 */
public final class GqaAttention implements Attention {
  private final Linear qProj;
  private final Linear kProj;
  private final Linear vProj;
  private final Linear oProj;
  private final float[] qNorm;
  private final float[] kNorm;
  private final double eps;
  private final RopeTable rope;
  private final int heads;
  private final int kvHeads;
  private final int headDim;
  private final float scale;

  /** Creates the block for {@code heads} query heads sharing {@code kvHeads} KV heads. */
  public GqaAttention(
      int heads,
      int kvHeads,
      int headDim,
      Linear qProj,
      Linear kProj,
      Linear vProj,
      Linear oProj,
      float[] qNorm,
      float[] kNorm,
      double eps,
      RopeTable rope) {
    this.heads = heads;
    this.kvHeads = kvHeads;
    this.headDim = headDim;
    this.qProj = qProj;
    this.kProj = kProj;
    this.vProj = vProj;
    this.oProj = oProj;
    this.qNorm = qNorm;
    this.kNorm = kNorm;
    this.eps = eps;
    this.rope = rope;
    this.scale = (float) (1.0 / Math.sqrt(headDim));
  }

  @Override
  public void forward(float[] out, float[] x, BatchLayout layout, KvCache[] caches, int layer) {
    int t = layout.numTokens();
    int kvWidth = kvHeads * headDim;
    float[] q = new float[t * heads * headDim];
    float[] k = new float[t * kvWidth];
    float[] v = new float[t * kvWidth];
    qProj.apply(q, x, t);
    kProj.apply(k, x, t);
    vProj.apply(v, x, t);
    if (qNorm != null) {
      CpuOps.rmsNorm(q, 0, t * heads, headDim, headDim, qNorm, eps);
    }
    if (kNorm != null) {
      CpuOps.rmsNorm(k, 0, t * kvHeads, headDim, headDim, kNorm, eps);
    }
    float[] scratch = new float[headDim];
    for (int i = 0; i < t; i++) {
      int pos = layout.positions()[i];
      for (int h = 0; h < heads; h++) {
        rope.rotate(q, (i * heads + h) * headDim, pos, scratch);
      }
      for (int h = 0; h < kvHeads; h++) {
        rope.rotate(k, (i * kvHeads + h) * headDim, pos, scratch);
      }
    }
    KvCache.storeNewTokens(layout, caches, layer, k, kvWidth, 0, v, kvWidth, 0);
    float[] attn = new float[t * heads * headDim];
    int[] seqOf = MlaAttention.seqOfToken(layout);
    int group = heads / kvHeads;
    IntStream.range(0, t * heads)
        .parallel()
        .forEach(
            job -> {
              int i = job / heads;
              int h = job % heads;
              KvCache cache = caches[seqOf[i]];
              float[] keys = cache.a(layer);
              float[] values = cache.b(layer);
              int kvOff = (h / group) * headDim;
              int len = layout.positions()[i] + 1;
              int qOff = (i * heads + h) * headDim;
              float[] scores = new float[len];
              for (int s = 0; s < len; s++) {
                scores[s] = CpuOps.dot(q, qOff, keys, s * kvWidth + kvOff, headDim) * scale;
              }
              CpuOps.softmax(scores, 0, len);
              for (int s = 0; s < len; s++) {
                CpuOps.axpy(scores[s], values, s * kvWidth + kvOff, attn, qOff, headDim);
              }
            });
    oProj.apply(out, attn, t);
  }
}
