package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CostedLoop;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.QueryBlockMath;
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
 * Heads of a token that attend to all their positions go in blocks of four that share each pass
 * over the cache ({@link QueryBlockMath}); the blocks run on the CPU kernels' threads as {@link
 * AttentionSplit} groups them, where the call is big enough to repay a parallel region ({@link
 * CostedLoop}). Each (token, head) pair's arithmetic is the same however they are grouped.
 */
final class CpuMlaAttention {
  /**
   * transformers builds q_a_layernorm and kv_a_layernorm with the default eps, not the config's.
   */
  private static final double LATENT_NORM_EPS = 1e-6;

  /** Heads of one token whose scores and contexts share each pass over the cache. */
  private static final int BLOCK = 4;

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
    int groups = (heads + BLOCK - 1) / BLOCK;
    AttentionSplit split = AttentionSplit.of(t, groups, threads);
    pairs.run(
        split.tasks(),
        cost(layout, selected),
        task -> {
          PairBuffers buffers = PairBuffers.forTask(kvLora, scoreSize, longest, denseOffs);
          for (int job = split.firstJob(task); job < split.endJob(task); job++) {
            int i = job / groups;
            int h0 = job % groups * BLOCK;
            int hn = Math.min(BLOCK, heads - h0);
            int[] sel = selected == null ? null : selected[i];
            int s = seqOf[i];
            if (sel == null) {
              attendBlock(
                  q,
                  i,
                  h0,
                  hn,
                  layout.positions()[i],
                  caches[s].a(layer),
                  kvB,
                  attn,
                  latentCols[s],
                  ropeCols[s],
                  buffers);
              continue;
            }
            for (int h = h0; h < h0 + hn; h++) {
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
   * One task's buffers: per query of a block its latent, scores and latent context, and the offsets
   * of the attended positions' latents ({@code dense} when it attends to all).
   */
  private static final class PairBuffers {
    final float[][] qLat = new float[BLOCK][];
    final float[][] ctx = new float[BLOCK][];
    final float[][] scores = new float[BLOCK][];
    final float[][] blockQLat = new float[BLOCK][];
    final float[][] blockCtx = new float[BLOCK][];
    final float[][] blockScores = new float[BLOCK][];
    final int[] qOff = new int[BLOCK];
    final int[] ropeOff = new int[BLOCK];
    final int[] selectedOffs;
    int[] dense;

    /** Per thread, the buffers of its last task, reused while they are big enough. */
    private static final ThreadLocal<PairBuffers> LAST = new ThreadLocal<>();

    private PairBuffers(int kvLora, int scoreSize, int longest) {
      for (int k = 0; k < BLOCK; k++) {
        qLat[k] = new float[kvLora];
        ctx[k] = new float[kvLora];
        scores[k] = new float[scoreSize];
      }
      this.selectedOffs = new int[longest];
    }

    /**
     * Buffers for a task of this thread: its last ones where they fit (a decode step runs many
     * small tasks, and allocating theirs cost about 5% of a verify pass), else new ones, kept
     * unless they exceed {@link Scratch#KEEP} floats.
     */
    static PairBuffers forTask(int kvLora, int scoreSize, int longest, int[] dense) {
      PairBuffers b = LAST.get();
      if (b == null
          || b.qLat[0].length != kvLora
          || b.scores[0].length < scoreSize
          || b.selectedOffs.length < longest) {
        b = new PairBuffers(kvLora, scoreSize, longest);
        if ((long) scoreSize * BLOCK <= Scratch.KEEP) {
          LAST.set(b);
        }
      }
      b.dense = dense;
      return b;
    }
  }

  /**
   * {@link #attendOne} of heads {@code h0..h0+hn-1} ({@code hn <= BLOCK}) of token {@code i} over
   * all its positions, the same bits: each head's query latent, then the scores of all of them in
   * one pass over the latent columns ({@link QueryBlockMath#scoresT4}), each softmax, the latent
   * contexts in one pass over the latents ({@link QueryBlockMath#axpyRows4}), each value
   * projection. A block of fewer heads repeats its last head.
   */
  private void attendBlock(
      float[] q,
      int i,
      int h0,
      int hn,
      int pos,
      float[] latents,
      float[] kvB,
      float[] attn,
      float[] latentCols,
      float[] ropeCols,
      PairBuffers buffers) {
    int len = pos + 1;
    for (int k = 0; k < BLOCK; k++) {
      int slot = Math.min(k, hn - 1);
      buffers.blockQLat[k] = buffers.qLat[slot];
      buffers.blockScores[k] = buffers.scores[slot];
      buffers.blockCtx[k] = buffers.ctx[slot];
      buffers.ropeOff[k] = (i * heads + h0 + slot) * (nope + ropeDim) + nope;
    }
    for (int k = 0; k < hn; k++) {
      int qOff = (i * heads + h0 + k) * (nope + ropeDim);
      java.util.Arrays.fill(buffers.qLat[k], 0f);
      VectorMath.axpyRows(q, qOff, kvB, ukRows[h0 + k], nope, buffers.qLat[k], 0, kvLora);
    }
    QueryBlockMath.scoresT4(
        buffers.blockQLat,
        buffers.qOff,
        latentCols,
        kvLora,
        q,
        buffers.ropeOff,
        ropeCols,
        ropeDim,
        len,
        scale,
        buffers.blockScores);
    for (int k = 0; k < hn; k++) {
      CpuOps.softmax(buffers.scores[k], 0, len);
      java.util.Arrays.fill(buffers.ctx[k], 0f);
    }
    QueryBlockMath.axpyRows4(
        buffers.blockScores, latents, buffers.dense, len, buffers.blockCtx, kvLora);
    for (int k = 0; k < hn; k++) {
      valueProjection(buffers.ctx[k], i, h0 + k, kvB, attn);
    }
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
    float[] qLat = buffers.qLat[0];
    java.util.Arrays.fill(qLat, 0f);
    VectorMath.axpyRows(q, qOff, kvB, ukRows[h], nope, qLat, 0, kvLora);
    float[] latents = cache.a(layer);
    float[] ropeKeys = cache.b(layer);
    int len = sel == null ? pos + 1 : sel.length;
    float[] scores = buffers.scores[0];
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
    float[] ctx = buffers.ctx[0];
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
