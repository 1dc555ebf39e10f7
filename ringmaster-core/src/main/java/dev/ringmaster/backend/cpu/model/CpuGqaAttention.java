package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CostedLoop;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.VectorMath;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;

/**
 * The CPU's grouped-query attention core (Qwen3-MoE), after the projections and the per-head query
 * and key norms: rotates queries and keys, appends keys and values of the KV heads to the caches
 * and attends, the (token, head) pairs spread over the CPU kernels' threads by {@link
 * AttentionSplit} where the call is big enough to repay a parallel region ({@link CostedLoop}).
 */
final class CpuGqaAttention {
  private final RopeTable rope;
  private final int heads;
  private final int kvHeads;
  private final int headDim;
  private final float scale;

  /** Decides per call whether the (token, head) pairs are worth the pool's threads. */
  private final CostedLoop pairs;

  private final int threads;

  /**
   * The attention of a rank holding {@code heads} query heads sharing {@code kvHeads} KV heads, run
   * on {@code kernels}' threads.
   */
  CpuGqaAttention(CpuKernelContext kernels, int heads, int kvHeads, int headDim, RopeTable rope) {
    this.pairs = new CostedLoop(kernels);
    this.threads = kernels.threads();
    this.heads = heads;
    this.kvHeads = kvHeads;
    this.headDim = headDim;
    this.rope = rope;
    this.scale = (float) (1.0 / Math.sqrt(headDim));
  }

  /**
   * Attention of the step's tokens: {@code q} {@code [t, heads * hd]}, {@code k} and {@code v}
   * {@code [t, kvHeads * hd]} (queries and keys rotated in place); returns the context {@code [t,
   * heads * hd]}.
   */
  float[] forward(
      float[] q, float[] k, float[] v, BatchLayout layout, KvCache[] caches, int layer) {
    int t = layout.numTokens();
    int kvWidth = kvHeads * headDim;
    float[] scratch = new float[headDim];
    float[] cs = new float[rope.dim()];
    for (int i = 0; i < t; i++) {
      rope.angles(layout.positions()[i], cs);
      for (int h = 0; h < heads; h++) {
        rope.rotate(q, (i * heads + h) * headDim, cs, scratch);
      }
      for (int h = 0; h < kvHeads; h++) {
        rope.rotate(k, (i * kvHeads + h) * headDim, cs, scratch);
      }
    }
    KvCache.storeNewTokens(layout, caches, layer, k, kvWidth, 0, v, kvWidth, 0);
    float[] attn = new float[t * heads * headDim];
    int[] seqOf = CpuMlaAttention.seqOfToken(layout);
    int group = heads / kvHeads;
    AttentionSplit split = AttentionSplit.of(t, heads, threads);
    double positions = 0;
    for (int i = 0; i < t; i++) {
      positions += layout.positions()[i] + 1;
    }
    // Work in multiply-adds: scores and values of every (token, head) over its positions.
    pairs.run(
        split.tasks(),
        heads * positions * 2.0 * headDim,
        task -> {
          for (int job = split.firstJob(task); job < split.endJob(task); job++) {
            int i = job / heads;
            int h = job % heads;
            KvCache cache = caches[seqOf[i]];
            float[] keys = cache.a(layer);
            float[] values = cache.b(layer);
            int kvOff = (h / group) * headDim;
            int len = layout.positions()[i] + 1;
            int qOff = (i * heads + h) * headDim;
            float[] scores = new float[len];
            int[] rowOffs = new int[len];
            for (int s = 0; s < len; s++) {
              rowOffs[s] = s * kvWidth + kvOff;
            }
            // Four positions at a time share their lane reductions (the same bits as one by one).
            int s = 0;
            for (; s + 4 <= len; s += 4) {
              VectorMath.dot4(
                  q,
                  qOff,
                  keys,
                  rowOffs[s],
                  rowOffs[s + 1],
                  rowOffs[s + 2],
                  rowOffs[s + 3],
                  headDim,
                  scores,
                  s);
              for (int p = s; p < s + 4; p++) {
                scores[p] *= scale;
              }
            }
            for (; s < len; s++) {
              scores[s] = VectorMath.dot(q, qOff, keys, rowOffs[s], headDim) * scale;
            }
            CpuOps.softmax(scores, 0, len);
            VectorMath.axpyRows(scores, values, rowOffs, len, attn, qOff, headDim);
          }
        });
    return attn;
  }
}
