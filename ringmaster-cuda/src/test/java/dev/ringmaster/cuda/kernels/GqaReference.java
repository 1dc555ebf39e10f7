package dev.ringmaster.cuda.kernels;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.testing.Rand;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A paged GQA cache kept on the host and the f64 reference of the GQA kernels: per-head RMSNorm and
 * rotary embedding (the angle {@code (float) pos * invFreq[i]} in f32, as the model defines it;
 * everything else in f64) and causal attention over the cache's bf16 values exactly as stored.
 */
final class GqaReference {
  /** Bf16 bits of a quiet NaN: cache rows nobody wrote. */
  static final short POISON = (short) 0x7fc0;

  final GqaAttention.Shape shape;
  final int blockSize;
  final int maxBlocks;
  final int poolBlocks;
  final int[] table;
  final short[] cache;
  final float[] invFreq;

  /**
   * A cache for sequences of {@code capacity[s]} positions each, blocks handed out in shuffled
   * order from a pool with spare blocks; every row poisoned.
   */
  GqaReference(GqaAttention.Shape shape, int blockSize, int[] capacity, Rand r) {
    this.shape = shape;
    this.blockSize = blockSize;
    int most = 0;
    int total = 0;
    for (int c : capacity) {
      int b = (c + blockSize - 1) / blockSize;
      most = Math.max(most, b);
      total += b;
    }
    maxBlocks = most;
    poolBlocks = total + 3;
    List<Integer> free = new ArrayList<>();
    for (int b = 0; b < poolBlocks; b++) {
      free.add(b);
    }
    Collections.shuffle(free, new java.util.Random(r.seed()));
    table = new int[capacity.length * maxBlocks];
    int next = 0;
    for (int s = 0; s < capacity.length; s++) {
      for (int b = 0; b < (capacity[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
    }
    cache = new short[poolBlocks * blockSize * shape.cacheRowWidth()];
    java.util.Arrays.fill(cache, POISON);
    int half = shape.headDim() / 2;
    invFreq = new float[half];
    for (int i = 0; i < half; i++) {
      invFreq[i] = 1f / (float) Math.pow(1_000_000f, (float) (2 * i) / shape.headDim());
    }
  }

  int slot(int seq, int pos) {
    return table[seq * maxBlocks + pos / blockSize] * blockSize + pos % blockSize;
  }

  /** Random bf16 keys and values at positions {@code 0 .. count-1} of {@code seq}. */
  void fillRandom(int seq, int count, Rand r) {
    int w = shape.cacheRowWidth();
    for (int p = 0; p < count; p++) {
      int base = slot(seq, p) * w;
      for (int i = 0; i < w; i++) {
        cache[base + i] = Numerics.floatToBf16((float) (r.random().nextDouble() * 2 - 1));
      }
    }
  }

  /**
   * {@code rope(weight * rmsnorm(x[off .. off+headDim]))} at {@code pos} in f64 ({@code weight}
   * null: no norm); {@code interleaved} pairs (2i, 2i+1) written de-interleaved, else (i, i+d/2).
   */
  double[] normRope(
      float[] x, int off, float[] weight, double eps, int pos, float attnScaling, boolean inter) {
    int d = shape.headDim();
    double[] v = new double[d];
    double ss = 0;
    for (int i = 0; i < d; i++) {
      v[i] = x[off + i];
      ss += v[i] * v[i];
    }
    if (weight != null) {
      double inv = 1 / Math.sqrt(ss / d + eps);
      for (int i = 0; i < d; i++) {
        v[i] = weight[i] * (v[i] * inv);
      }
    }
    int half = d / 2;
    double[] o = new double[d];
    for (int i = 0; i < half; i++) {
      float angle = (float) pos * invFreq[i];
      double c = Math.cos(angle) * attnScaling;
      double s = Math.sin(angle) * attnScaling;
      double x0 = inter ? v[2 * i] : v[i];
      double x1 = inter ? v[2 * i + 1] : v[half + i];
      o[i] = x0 * c - x1 * s;
      o[half + i] = x1 * c + x0 * s;
    }
    return o;
  }

  /**
   * Attention of query head {@code h} (f64 {@code q}, unscaled) over positions {@code 0 .. pos} of
   * {@code seq} in {@code stored} (the device's cache as read back), into {@code out[off ..]}.
   */
  void attend(
      double[] q, int h, int seq, int pos, float scale, short[] stored, float[] out, int off) {
    int d = shape.headDim();
    int w = shape.cacheRowWidth();
    int j = h / shape.group();
    double[] scores = new double[pos + 1];
    double max = Double.NEGATIVE_INFINITY;
    for (int p = 0; p <= pos; p++) {
      int k = slot(seq, p) * w + j * d;
      double dot = 0;
      for (int i = 0; i < d; i++) {
        dot += q[i] * Numerics.bf16ToFloat(stored[k + i]);
      }
      scores[p] = dot * scale;
      max = Math.max(max, scores[p]);
    }
    double sum = 0;
    for (int p = 0; p <= pos; p++) {
      scores[p] = Math.exp(scores[p] - max);
      sum += scores[p];
    }
    double[] acc = new double[d];
    for (int p = 0; p <= pos; p++) {
      int v = slot(seq, p) * w + (shape.kvHeads() + j) * d;
      for (int i = 0; i < d; i++) {
        acc[i] += scores[p] * Numerics.bf16ToFloat(stored[v + i]);
      }
    }
    for (int i = 0; i < d; i++) {
      out[off + i] = (float) (acc[i] / sum);
    }
  }
}
