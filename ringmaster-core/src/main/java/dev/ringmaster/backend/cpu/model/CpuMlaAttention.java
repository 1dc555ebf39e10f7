package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CostedLoop;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.VectorMath;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;

/**
 * The CPU's multi-head latent attention core (DeepSeek-V2/V3) in the absorbed form, after the query
 * and KV down-projections: normalises the KV latent, rotates the rotary parts, appends the latents
 * and shared rotary keys to the caches, projects each query head into latent space through its
 * slice of {@code kv_b_proj} (W_UK), attends over latents and projects the latent context back
 * through the value slice (W_UV). Mathematically equal to the expanded form transformers computes.
 * The (token, head) pairs run on the CPU kernels' threads as {@link AttentionSplit} groups them,
 * where the call is big enough to repay a parallel region ({@link CostedLoop}); each pair's
 * arithmetic is the same however they are grouped.
 */
final class CpuMlaAttention {
  /**
   * transformers builds q_a_layernorm and kv_a_layernorm with the default eps, not the config's.
   */
  private static final double LATENT_NORM_EPS = 1e-6;

  /** Per thread, the column copies of the caches (two per sequence) of the last call. */
  private static final ThreadLocal<Scratch> COLUMNS = ThreadLocal.withInitial(Scratch::new);

  /**
   * Float arrays by slot, grown as needed and kept for the next call, up to {@link #KEEP} floats
   * each (longer contexts get a fresh array per call rather than pinning it to the thread).
   */
  private static final class Scratch {
    static final int KEEP = 1 << 20;
    private float[][] arrays = new float[0][];

    float[] take(int slot, int size) {
      if (size > KEEP) {
        return new float[size];
      }
      if (slot >= arrays.length) {
        arrays = java.util.Arrays.copyOf(arrays, Math.max(slot + 1, 2 * arrays.length));
      }
      float[] a = arrays[slot];
      if (a == null || a.length < size) {
        a = new float[Math.min(KEEP, Math.max(size, a == null ? 0 : a.length + a.length / 2))];
        arrays[slot] = a;
      }
      return a;
    }
  }

  private final RopeTable rope;
  private final int heads;
  private final int nope;
  private final int ropeDim;
  private final int vDim;
  private final int kvLora;
  private final float scale;

  /** Decides per call whether the (token, head) pairs are worth the pool's threads. */
  private final CostedLoop pairs;

  private final int threads;

  /** Per head, the offsets of its W_UK rows in kv_b_proj. */
  private final int[][] ukRows;

  /** The attention of a rank holding {@code heads} of the model's heads, on {@code kernels}. */
  CpuMlaAttention(CpuKernelContext kernels, ModelConfig cfg, int heads, RopeTable rope) {
    this.pairs = new CostedLoop(kernels);
    this.threads = kernels.threads();
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
    this.ukRows = new int[heads][nope];
    for (int h = 0; h < heads; h++) {
      for (int d = 0; d < nope; d++) {
        ukRows[h][d] = (h * (nope + vDim) + d) * kvLora;
      }
    }
  }

  /**
   * Attention of the step's tokens: {@code q} {@code [t, heads * qk]} and {@code kva} {@code [t,
   * kvLora + rope]} (both rotated and normalised in place), cached; returns the context {@code [t,
   * heads * v]}. {@code kvB} is kv_b_proj as f32 {@code [heads * (nope + v), kvLora]}. Token {@code
   * i} attends to the positions {@code selected[i]} (ascending) only, or to all up to its own where
   * that entry (or {@code selected}) is null.
   */
  float[] forward(
      float[] q,
      float[] kva,
      float[] kvANorm,
      float[] kvB,
      BatchLayout layout,
      KvCache[] caches,
      int layer,
      int[][] selected) {
    int t = layout.numTokens();
    int qkDim = nope + ropeDim;
    int kvaWidth = kvLora + ropeDim;
    CpuOps.rmsNorm(kva, 0, t, kvLora, kvaWidth, kvANorm, LATENT_NORM_EPS);
    float[] scratch = new float[Math.max(ropeDim, 1)];
    // One evaluation of the position's cosines and sines for its key and all its heads.
    float[] cs = new float[Math.max(ropeDim, 1)];
    for (int i = 0; i < t; i++) {
      rope.angles(layout.positions()[i], cs);
      rope.rotate(kva, i * kvaWidth + kvLora, cs, scratch);
      for (int h = 0; h < heads; h++) {
        rope.rotate(q, (i * heads + h) * qkDim + nope, cs, scratch);
      }
    }
    // Append the new latents and rotary keys to each sequence's cache.
    KvCache.storeNewTokens(layout, caches, layer, kva, kvaWidth, 0, kva, kvaWidth, kvLora);
    float[] attn = new float[t * heads * vDim];
    int[] seqOf = seqOfToken(layout);
    // Each sequence's latents and rotary keys as columns, shared by all its tokens and heads, so
    // a score is one chain per position lane (VectorMath.scoresT) rather than a lane reduction.
    int lanes = VectorMath.lanes();
    float[][] latentCols = new float[layout.numSeqs()][];
    float[][] ropeCols = new float[layout.numSeqs()][];
    int[] strides = new int[layout.numSeqs()];
    for (int s = 0; s < layout.numSeqs(); s++) {
      int len = 0;
      for (int i = layout.seqStart()[s]; i < layout.seqStart()[s + 1]; i++) {
        if (selected == null || selected[i] == null) {
          len = Math.max(len, layout.positions()[i] + 1);
        }
      }
      if (len > 0) {
        int stride = (len + lanes - 1) / lanes * lanes;
        strides[s] = stride;
        // Scratch reused across calls: the lanes past len are never read back, so stale values
        // there do not matter, and not zeroing tens of kilobytes per layer and step does.
        latentCols[s] = COLUMNS.get().take(2 * s, VectorMath.columnsSize(kvLora, len));
        ropeCols[s] = COLUMNS.get().take(2 * s + 1, VectorMath.columnsSize(ropeDim, len));
        VectorMath.transpose(caches[s].a(layer), kvLora, len, latentCols[s]);
        VectorMath.transpose(caches[s].b(layer), ropeDim, len, ropeCols[s]);
      }
    }
    // Offsets of positions 0..longest-1 in a latent cache, shared by every pair that attends to
    // all its positions; the per-pair buffers are made once per task, not per pair.
    int maxLen = 0;
    int widest = 0;
    for (int i = 0; i < t; i++) {
      int len =
          selected == null || selected[i] == null ? layout.positions()[i] + 1 : selected[i].length;
      maxLen = Math.max(maxLen, len);
      widest = Math.max(widest, strides[seqOf[i]]);
    }
    int longest = maxLen;
    int[] denseOffs = new int[longest];
    for (int j = 0; j < longest; j++) {
      denseOffs[j] = j * kvLora;
    }
    int scoreSize = Math.max(longest, widest);
    AttentionSplit split = AttentionSplit.of(t, heads, threads);
    pairs.run(
        split.tasks(),
        cost(layout, selected),
        task -> {
          PairBuffers buffers = new PairBuffers(kvLora, scoreSize, longest, denseOffs);
          for (int job = split.firstJob(task); job < split.endJob(task); job++) {
            int i = job / heads;
            int h = job % heads;
            int[] sel = selected == null ? null : selected[i];
            int s = seqOf[i];
            if (sel == null && h + 1 < heads && job + 1 < split.endJob(task)) {
              // Two heads of one token over all its positions: one pass over the latents.
              attendTwo(
                  q,
                  i,
                  h,
                  layout.positions()[i],
                  caches[s].a(layer),
                  kvB,
                  attn,
                  latentCols[s],
                  ropeCols[s],
                  buffers);
              job++;
              continue;
            }
            attendOne(
                q,
                i,
                h,
                layout.positions()[i],
                sel,
                caches[s],
                layer,
                kvB,
                attn,
                latentCols[s],
                ropeCols[s],
                buffers);
          }
        });
    return attn;
  }

  /**
   * The call's work in multiply-adds: per (token, head) its scores and latent context over the
   * attended positions, and the two absorbed projections.
   */
  private double cost(BatchLayout layout, int[][] selected) {
    double positions = 0;
    for (int i = 0; i < layout.numTokens(); i++) {
      positions +=
          selected == null || selected[i] == null ? layout.positions()[i] + 1 : selected[i].length;
    }
    return heads
        * (positions * (2.0 * kvLora + ropeDim)
            + layout.numTokens() * (double) (nope + vDim) * kvLora);
  }

  /**
   * One task's buffers for its pairs: the query latent, scores and latent context of a pair, and
   * the offsets of the attended positions' latents ({@code dense} when it attends to all).
   */
  private static final class PairBuffers {
    final float[] qLat;
    final float[] ctx;
    final float[] scores;
    final float[] qLat2;
    final float[] ctx2;
    final float[] scores2;
    final int[] selectedOffs;
    final int[] dense;

    PairBuffers(int kvLora, int scoreSize, int longest, int[] dense) {
      this.qLat = new float[kvLora];
      this.ctx = new float[kvLora];
      this.scores = new float[scoreSize];
      this.qLat2 = new float[kvLora];
      this.ctx2 = new float[kvLora];
      this.scores2 = new float[scoreSize];
      this.selectedOffs = new int[longest];
      this.dense = dense;
    }
  }

  /**
   * {@link #attendOne} of heads {@code h} and {@code h + 1} of token {@code i} over all its
   * positions, the same bits: scores and softmax per head, then both latent contexts in one pass
   * over the latents ({@link VectorMath#axpyRows2}), then each value projection.
   */
  private void attendTwo(
      float[] q,
      int i,
      int h,
      int pos,
      float[] latents,
      float[] kvB,
      float[] attn,
      float[] latentCols,
      float[] ropeCols,
      PairBuffers buffers) {
    int len = pos + 1;
    denseScores(q, i, h, len, kvB, latentCols, ropeCols, buffers.qLat, buffers.scores);
    denseScores(q, i, h + 1, len, kvB, latentCols, ropeCols, buffers.qLat2, buffers.scores2);
    java.util.Arrays.fill(buffers.ctx, 0f);
    java.util.Arrays.fill(buffers.ctx2, 0f);
    VectorMath.axpyRows2(
        buffers.scores,
        buffers.scores2,
        latents,
        buffers.dense,
        len,
        buffers.ctx,
        buffers.ctx2,
        kvLora);
    valueProjection(buffers.ctx, i, h, kvB, attn);
    valueProjection(buffers.ctx2, i, h + 1, kvB, attn);
  }

  /** Head {@code h}'s query latent, then its softmaxed scores over positions {@code 0..len-1}. */
  private void denseScores(
      float[] q,
      int i,
      int h,
      int len,
      float[] kvB,
      float[] latentCols,
      float[] ropeCols,
      float[] qLat,
      float[] scores) {
    int qOff = (i * heads + h) * (nope + ropeDim);
    java.util.Arrays.fill(qLat, 0f);
    VectorMath.axpyRows(q, qOff, kvB, ukRows[h], nope, qLat, 0, kvLora);
    VectorMath.scoresT(
        qLat, 0, latentCols, kvLora, q, qOff + nope, ropeCols, ropeDim, len, scale, scores);
    CpuOps.softmax(scores, 0, len);
  }

  /** Head {@code h}'s output {@code W_UV[h] ctx} into {@code attn}, four rows per reduction. */
  private void valueProjection(float[] ctx, int i, int h, float[] kvB, float[] attn) {
    int rowBase = h * (nope + vDim);
    int outOff = (i * heads + h) * vDim;
    int d = 0;
    for (; d + 4 <= vDim; d += 4) {
      int uv = (rowBase + nope + d) * kvLora;
      VectorMath.dot4(
          ctx, 0, kvB, uv, uv + kvLora, uv + 2 * kvLora, uv + 3 * kvLora, kvLora, attn, outOff + d);
    }
    for (; d < vDim; d++) {
      attn[outOff + d] = VectorMath.dot(kvB, (rowBase + nope + d) * kvLora, ctx, 0, kvLora);
    }
  }

  private void attendOne(
      float[] q,
      int i,
      int h,
      int pos,
      int[] sel,
      KvCache cache,
      int layer,
      float[] kvB,
      float[] attn,
      float[] latentCols,
      float[] ropeCols,
      PairBuffers buffers) {
    int qkDim = nope + ropeDim;
    int qOff = (i * heads + h) * qkDim;
    // q_lat = W_UK[h]^T q_nope
    float[] qLat = buffers.qLat;
    java.util.Arrays.fill(qLat, 0f);
    VectorMath.axpyRows(q, qOff, kvB, ukRows[h], nope, qLat, 0, kvLora);
    float[] latents = cache.a(layer);
    float[] ropeKeys = cache.b(layer);
    int len = sel == null ? pos + 1 : sel.length;
    float[] scores = buffers.scores;
    int[] latentOffs;
    if (sel == null) {
      latentOffs = buffers.dense;
      VectorMath.scoresT(
          qLat, 0, latentCols, kvLora, q, qOff + nope, ropeCols, ropeDim, len, scale, scores);
    } else {
      latentOffs = buffers.selectedOffs;
      selectedScores(q, qOff, qLat, sel, latents, ropeKeys, latentOffs, scores);
    }
    CpuOps.softmax(scores, 0, len);
    float[] ctx = buffers.ctx;
    java.util.Arrays.fill(ctx, 0f);
    VectorMath.axpyRows(scores, latents, latentOffs, len, ctx, 0, kvLora);
    valueProjection(ctx, i, h, kvB, attn);
  }

  /** Scores against the selected positions {@code sel}, four per lane reduction. */
  private void selectedScores(
      float[] q,
      int qOff,
      float[] qLat,
      int[] sel,
      float[] latents,
      float[] ropeKeys,
      int[] latentOffs,
      float[] scores) {
    int len = sel.length;
    int[] at = new int[len];
    for (int j = 0; j < len; j++) {
      at[j] = sel[j];
      latentOffs[j] = at[j] * kvLora;
    }
    // Four positions at a time share their lane reductions (the same bits as one at a time).
    float[] four = new float[8];
    int j = 0;
    for (; j + 4 <= len; j += 4) {
      VectorMath.dot4(
          qLat,
          0,
          latents,
          latentOffs[j],
          latentOffs[j + 1],
          latentOffs[j + 2],
          latentOffs[j + 3],
          kvLora,
          four,
          0);
      VectorMath.dot4(
          q,
          qOff + nope,
          ropeKeys,
          at[j] * ropeDim,
          at[j + 1] * ropeDim,
          at[j + 2] * ropeDim,
          at[j + 3] * ropeDim,
          ropeDim,
          four,
          4);
      for (int k = 0; k < 4; k++) {
        scores[j + k] = (four[k] + four[4 + k]) * scale;
      }
    }
    for (; j < len; j++) {
      int s = at[j];
      float sc = VectorMath.dot(qLat, 0, latents, s * kvLora, kvLora);
      sc += VectorMath.dot(q, qOff + nope, ropeKeys, s * ropeDim, ropeDim);
      scores[j] = sc * scale;
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
