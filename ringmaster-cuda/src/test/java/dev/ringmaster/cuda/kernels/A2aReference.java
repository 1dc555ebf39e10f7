package dev.ringmaster.cuda.kernels;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Plain-Java reference of the all-to-all expert dispatch ({@code moe_dispatch.cu}): what each
 * kernel writes, and the exchanges between ranks. Elements a kernel leaves unwritten hold {@link
 * #UNWRITTEN} (a NaN no kernel writes), so comparisons skip exactly those.
 */
final class A2aReference {
  /** Marks an element the kernel does not write. */
  static final float UNWRITTEN = Float.intBitsToFloat(0x7fc00bad);

  private A2aReference() {}

  /** Whether {@code v} is the {@link #UNWRITTEN} marker. */
  static boolean unwritten(float v) {
    return Float.floatToRawIntBits(v) == 0x7fc00bad;
  }

  /** What an owner's expert kernels get from {@link #unpack}. */
  record Unpacked(float[] x, int[] ids, float[] weights) {}

  /** {@code rm_a2a_pack}: the send buffer of {@code l}'s rank. */
  static float[] pack(A2aLayout l, float[] x, int[] ids, float[] weights, int[] owner) {
    int h = l.hidden();
    int k = l.topK();
    int row = l.rowFloats();
    float[] send = new float[l.ranks() * l.perRank() * row];
    Arrays.fill(send, UNWRITTEN);
    for (int p = 0; p < l.ranks(); p++) {
      for (int i = 0; i < l.perRank(); i++) {
        int base = (p * l.perRank() + i) * row;
        boolean any = false;
        for (int j = 0; j < k; j++) {
          int id = -1;
          float w = 0f;
          if (i < l.mine()) {
            int slot = (l.first() + i) * k + j;
            if (owner[ids[slot]] == p) {
              id = ids[slot];
              w = weights[slot];
            }
          }
          send[base + h + j] = Float.intBitsToFloat(id);
          send[base + h + k + j] = w;
          any |= id >= 0;
        }
        if (any) {
          System.arraycopy(x, (l.first() + i) * h, send, base, h);
        }
      }
    }
    return send;
  }

  /**
   * An all-to-all of equal blocks: rank p receives block p of every rank's {@code sends[s]}, in
   * rank order.
   */
  static float[][] exchange(float[][] sends, int perPeer) {
    int ranks = sends.length;
    float[][] recv = new float[ranks][ranks * perPeer];
    for (int p = 0; p < ranks; p++) {
      for (int s = 0; s < ranks; s++) {
        System.arraycopy(sends[s], p * perPeer, recv[p], s * perPeer, perPeer);
      }
    }
    return recv;
  }

  /** {@code rm_a2a_unpack} on {@code l}'s rank. */
  static Unpacked unpack(A2aLayout l, float[] recv, int[] localOf) {
    int h = l.hidden();
    int k = l.topK();
    int rows = l.receivedRows();
    float[] x = new float[rows * h];
    Arrays.fill(x, UNWRITTEN);
    int[] ids = new int[rows * k];
    float[] weights = new float[rows * k];
    for (int r = 0; r < rows; r++) {
      int base = r * l.rowFloats();
      boolean any = false;
      for (int j = 0; j < k; j++) {
        int id = Float.floatToRawIntBits(recv[base + h + j]);
        int local = id >= 0 && id < localOf.length ? localOf[id] : -1;
        ids[r * k + j] = local;
        weights[r * k + j] = local >= 0 ? recv[base + h + k + j] : 0f;
        any |= local >= 0;
      }
      if (any) {
        System.arraycopy(recv, base, x, r * h, h);
      }
    }
    return new Unpacked(x, ids, weights);
  }

  /**
   * {@code rm_a2a_combine} on {@code l}'s rank: {@code shared} holds its slice rows {@code
   * [perRank, hidden]} (or is null), {@code back} the returned pair rows of every owner in rank
   * order.
   */
  static float[] combine(A2aLayout l, float[] shared, float[] back, int[] ids, int[] owner) {
    int h = l.hidden();
    int k = l.topK();
    float[] out = new float[l.perRank() * h];
    for (int i = 0; i < l.mine(); i++) {
      for (int d = 0; d < h; d++) {
        float s = shared != null ? shared[i * h + d] : 0f;
        for (int j = 0; j < k; j++) {
          int p = owner[ids[(l.first() + i) * k + j]];
          s += back[((p * l.perRank() + i) * k + j) * h + d];
        }
        out[i * h + d] = s;
      }
    }
    return out;
  }

  /**
   * Routing of {@code n} tokens to {@code topK} distinct experts each, drawn from {@code [0,
   * among)} (so experts from {@code among} on are never chosen), weights in {@code [0, 1)}.
   */
  static void route(SplittableRandom r, int n, int topK, int among, int[] ids, float[] weights) {
    if (among < topK) {
      throw new IllegalArgumentException(topK + " distinct experts among " + among);
    }
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < topK; j++) {
        int pick;
        boolean dup;
        do {
          pick = r.nextInt(among);
          dup = false;
          for (int q = 0; q < j; q++) {
            dup |= ids[t * topK + q] == pick;
          }
        } while (dup);
        ids[t * topK + j] = pick;
        weights[t * topK + j] = (float) r.nextDouble();
      }
    }
  }
}
