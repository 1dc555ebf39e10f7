package dev.ringmaster.parallel;

import java.util.Random;

/** Inputs and reference results shared by the collective tests (in-process and TCP). */
public final class CollectiveTestData {
  /** Sizes that exercise empty, tiny, prime, odd and multi-chunk messages. */
  public static final int[] SIZES = {0, 1, 2, 3, 5, 7, 8, 13, 31, 64, 97, 128, 1000, 1021, 4099};

  private CollectiveTestData() {}

  /** Rank r's input: reproducible random floats in [-1, 1), different per rank and call. */
  public static float[] input(long seed, int rank, int len) {
    Random random = new Random(seed * 1_000_003L + rank);
    float[] x = new float[len];
    for (int i = 0; i < len; i++) {
      x[i] = random.nextFloat() * 2 - 1;
    }
    return x;
  }

  /** All ranks' inputs. */
  public static float[][] inputs(long seed, int worldSize, int len) {
    float[][] x = new float[worldSize][];
    for (int r = 0; r < worldSize; r++) {
      x[r] = input(seed, r, len);
    }
    return x;
  }

  /** The exact sum in double, per element. */
  public static double[] doubleSum(float[][] x, int len) {
    double[] sum = new double[len];
    for (float[] xr : x) {
      for (int i = 0; i < len; i++) {
        sum[i] += xr[i];
      }
    }
    return sum;
  }

  /** Float sum in rank order: what one-shot, two-shot and reduce-scatter compute. */
  public static float[] rankOrderSum(float[][] x, int from, int len) {
    float[] sum = new float[len];
    System.arraycopy(x[0], from, sum, 0, len);
    for (int r = 1; r < x.length; r++) {
      for (int i = 0; i < len; i++) {
        sum[i] += x[r][from + i];
      }
    }
    return sum;
  }

  /** Float sum in the ring's order: segment s starts at rank s and goes around the ring. */
  public static float[] ringOrderSum(float[][] x, int len) {
    int n = x.length;
    float[] sum = new float[len];
    for (int s = 0; s < n; s++) {
      int at = Splits.evenOffset(len, n, s);
      for (int i = at; i < at + Splits.evenCount(len, n, s); i++) {
        float acc = x[s][i];
        for (int k = 1; k < n; k++) {
          acc = acc + x[(s + k) % n][i];
        }
        sum[i] = acc;
      }
    }
    return sum;
  }

  /** Float sum along recursive doubling's tree (fold extras into r-P, then pairwise). */
  public static float[] recursiveDoublingSum(float[][] x, int len) {
    int n = x.length;
    int pow2 = Integer.highestOneBit(n);
    float[][] v = new float[pow2][];
    for (int r = 0; r < pow2; r++) {
      v[r] = x[r].clone();
      if (r + pow2 < n) {
        for (int i = 0; i < len; i++) {
          v[r][i] = v[r][i] + x[r + pow2][i];
        }
      }
    }
    for (int step = 1; step < pow2; step <<= 1) {
      float[][] next = new float[pow2][len];
      for (int r = 0; r < pow2; r++) {
        int lo = Math.min(r, r ^ step);
        int hi = Math.max(r, r ^ step);
        for (int i = 0; i < len; i++) {
          next[r][i] = v[lo][i] + v[hi][i];
        }
      }
      v = next;
    }
    return v[0];
  }

  /** The exact float result an algorithm computes, given its documented summation order. */
  public static float[] expected(AllReduceAlgorithm algorithm, float[][] x, int len) {
    if (x.length == 1) {
      return x[0].clone();
    }
    return switch (algorithm) {
      case RING, NCCL -> ringOrderSum(x, len);
      case ONESHOT, TWOSHOT, FUSED -> rankOrderSum(x, 0, len);
      case RECURSIVE_DOUBLING -> recursiveDoublingSum(x, len);
      case AUTO -> throw new IllegalArgumentException("resolve AUTO first");
    };
  }
}
