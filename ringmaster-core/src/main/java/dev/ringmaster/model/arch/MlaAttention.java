package dev.ringmaster.model.arch;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.stream.IntStream;

/**
 * Multi-head latent attention (DeepSeek-V2/V3) in the absorbed form: the cache holds only the
 * normalised KV latent and the shared rotary key; each query head is projected into latent space
 * through its slice of {@code kv_b_proj} (W_UK), attends over latents, and the latent context is
 * projected back through the value slice (W_UV). Mathematically equal to the expanded form
 * transformers computes.
 */
public final class MlaAttention implements Attention {
  /**
   * transformers builds q_a_layernorm and kv_a_layernorm with the default eps, not the config's.
   */
  private static final double LATENT_NORM_EPS = 1e-6;

  private final Linear qProj;
  private final Linear qA;
  private final float[] qANorm;
  private final Linear qB;
  private final Linear kvA;
  private final float[] kvANorm;
  private final float[] kvB;
  private final Linear oProj;
  private final RopeTable rope;
  private final int heads;
  private final int nope;
  private final int ropeDim;
  private final int vDim;
  private final int kvLora;
  private final float scale;

  /**
   * Creates the block; exactly one of {@code qProj} and ({@code qA}, {@code qANorm}, {@code qB}) is
   * given. {@code kvB} is {@code kv_b_proj}'s weight as f32 {@code [heads*(nope+v), kvLora]}.
   */
  public MlaAttention(
      ModelConfig cfg,
      int heads,
      Linear qProj,
      Linear qA,
      float[] qANorm,
      Linear qB,
      Linear kvA,
      float[] kvANorm,
      float[] kvB,
      Linear oProj,
      RopeTable rope) {
    this.qProj = qProj;
    this.qA = qA;
    this.qANorm = qANorm;
    this.qB = qB;
    this.kvA = kvA;
    this.kvANorm = kvANorm;
    this.kvB = kvB;
    this.oProj = oProj;
    this.rope = rope;
    this.heads = heads;
    this.nope = cfg.qkNopeHeadDim();
    this.ropeDim = cfg.qkRopeHeadDim();
    this.vDim = cfg.vHeadDim();
    this.kvLora = cfg.kvLoraRank();
    double s = 1.0 / Math.sqrt(nope + ropeDim);
    if (!"default".equals(cfg.rope().type()) && cfg.rope().mscaleAllDim() != 0) {
      double m = RopeTable.yarnMscale(cfg.rope().factor(), cfg.rope().mscaleAllDim());
      s = s * m * m;
    }
    this.scale = (float) s;
  }

  @Override
  public void forward(float[] out, float[] x, BatchLayout layout, KvCache[] caches, int layer) {
    int t = layout.numTokens();
    int qkDim = nope + ropeDim;
    float[] q = new float[t * heads * qkDim];
    if (qProj != null) {
      qProj.apply(q, x, t);
    } else {
      float[] qa = new float[t * qA.out()];
      qA.apply(qa, x, t);
      CpuOps.rmsNorm(qa, 0, t, qA.out(), qA.out(), qANorm, LATENT_NORM_EPS);
      qB.apply(q, qa, t);
    }
    int kvaWidth = kvLora + ropeDim;
    float[] kva = new float[t * kvaWidth];
    kvA.apply(kva, x, t);
    CpuOps.rmsNorm(kva, 0, t, kvLora, kvaWidth, kvANorm, LATENT_NORM_EPS);
    float[] scratch = new float[Math.max(ropeDim, 1)];
    for (int i = 0; i < t; i++) {
      int pos = layout.positions()[i];
      rope.rotate(kva, i * kvaWidth + kvLora, pos, scratch);
      for (int h = 0; h < heads; h++) {
        rope.rotate(q, (i * heads + h) * qkDim + nope, pos, scratch);
      }
    }
    // Append the new latents and rotary keys to each sequence's cache.
    KvCache.storeNewTokens(layout, caches, layer, kva, kvaWidth, 0, kva, kvaWidth, kvLora);
    float[] attn = new float[t * heads * vDim];
    int[] seqOf = seqOfToken(layout);
    IntStream.range(0, t * heads)
        .parallel()
        .forEach(
            job -> {
              int i = job / heads;
              int h = job % heads;
              attendOne(q, i, h, layout.positions()[i], caches[seqOf[i]], layer, attn);
            });
    oProj.apply(out, attn, t);
  }

  private void attendOne(float[] q, int i, int h, int pos, KvCache cache, int layer, float[] attn) {
    int qkDim = nope + ropeDim;
    int qOff = (i * heads + h) * qkDim;
    int rowBase = h * (nope + vDim);
    // q_lat = W_UK[h]^T q_nope
    float[] qLat = new float[kvLora];
    for (int d = 0; d < nope; d++) {
      float qd = q[qOff + d];
      CpuOps.axpy(qd, kvB, (rowBase + d) * kvLora, qLat, 0, kvLora);
    }
    float[] latents = cache.a(layer);
    float[] ropeKeys = cache.b(layer);
    int len = pos + 1;
    float[] scores = new float[len];
    for (int s = 0; s < len; s++) {
      float sc = CpuOps.dot(qLat, 0, latents, s * kvLora, kvLora);
      sc += CpuOps.dot(q, qOff + nope, ropeKeys, s * ropeDim, ropeDim);
      scores[s] = sc * scale;
    }
    CpuOps.softmax(scores, 0, len);
    float[] ctx = new float[kvLora];
    for (int s = 0; s < len; s++) {
      CpuOps.axpy(scores[s], latents, s * kvLora, ctx, 0, kvLora);
    }
    int outOff = (i * heads + h) * vDim;
    for (int d = 0; d < vDim; d++) {
      attn[outOff + d] = CpuOps.dot(kvB, (rowBase + nope + d) * kvLora, ctx, 0, kvLora);
    }
  }

  static int[] seqOfToken(BatchLayout layout) {
    int[] seqOf = new int[layout.numTokens()];
    for (int s = 0; s < layout.numSeqs(); s++) {
      for (int i = layout.seqStart()[s]; i < layout.seqStart()[s + 1]; i++) {
        seqOf[i] = s;
      }
    }
    return seqOf;
  }
}
