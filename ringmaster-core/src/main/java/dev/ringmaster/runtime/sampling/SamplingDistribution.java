package dev.ringmaster.runtime.sampling;

import java.util.Arrays;

/**
 * The distribution a row's token follows under {@link RowSampler}'s rules, computed directly (in
 * doubles, by sorting: slow, for checking samplers, not for serving), and a chi-square check of
 * observed draws against it. CPU and device samplers are tested against it.
 */
public final class SamplingDistribution {
  private SamplingDistribution() {}

  /**
   * Logits after bias and penalties, as {@link RowSampler} defines them.
   *
   * @param seen distinct tokens seen in prompt or output
   * @param outputCounts their occurrences in the output
   */
  public static double[] adjusted(
      float[] logits,
      int[] biasIds,
      float[] biasValues,
      int[] seen,
      int[] outputCounts,
      double rep,
      double freq,
      double pres) {
    double[] a = new double[logits.length];
    for (int i = 0; i < a.length; i++) {
      a[i] = logits[i];
    }
    for (int e = 0; e < biasIds.length; e++) {
      a[biasIds[e]] += biasValues[e];
    }
    for (int e = 0; e < seen.length; e++) {
      int t = seen[e];
      double v = a[t] > 0 ? a[t] / rep : a[t] * rep;
      a[t] = v - outputCounts[e] * freq - (outputCounts[e] > 0 ? pres : 0);
    }
    return a;
  }

  /** Probability of each token under temperature, top-k, top-p and min-p (ties kept). */
  public static double[] probabilities(double[] l, double t, int topK, double topP, double minP) {
    int v = l.length;
    double max = Arrays.stream(l).max().orElseThrow();
    double[] p = new double[v];
    if (t == 0 || topK == 1) {
      for (int i = 0; i < v; i++) {
        if (l[i] == max) {
          p[i] = 1;
          return p;
        }
      }
    }
    double[] sorted = l.clone();
    Arrays.sort(sorted);
    double kth = topK > 0 && topK < v ? sorted[v - topK] : Double.NEGATIVE_INFINITY;
    double[] w = new double[v];
    double massK = 0;
    for (int i = 0; i < v; i++) {
      w[i] = l[i] >= kth ? Math.exp((l[i] - max) / t) : 0;
      massK += w[i];
    }
    // The top-p threshold: the largest weight v whose tokens with w >= v reach topP of the mass.
    double[] ws = w.clone();
    Arrays.sort(ws);
    double threshold = 0;
    double acc = 0;
    for (int i = v - 1; i >= 0; i--) {
      acc += ws[i];
      if (i > 0 && ws[i - 1] == ws[i]) {
        continue;
      }
      if (acc >= topP * massK) {
        threshold = ws[i];
        break;
      }
    }
    double sum = 0;
    for (int i = 0; i < v; i++) {
      p[i] = w[i] > 0 && w[i] >= threshold && w[i] >= minP ? w[i] : 0;
      sum += p[i];
    }
    for (int i = 0; i < v; i++) {
      p[i] /= sum;
    }
    return p;
  }

  /**
   * Why {@code counts} (draws per token) do not fit {@code probs}, or null when they do: no draw of
   * a zero-probability token, and a chi-square statistic below a bound whose false-alarm rate is
   * about 1e-6 or less.
   */
  public static String misfit(int[] counts, double[] probs) {
    long n = Arrays.stream(counts).asLongStream().sum();
    double chi = 0;
    int df = -1;
    for (int i = 0; i < probs.length; i++) {
      if (probs[i] == 0) {
        if (counts[i] != 0) {
          return "token " + i + " has probability 0 but was drawn " + counts[i] + " times";
        }
        continue;
      }
      double e = probs[i] * n;
      chi += (counts[i] - e) * (counts[i] - e) / e;
      df++;
    }
    double bound = df + 7 * Math.sqrt(2.0 * Math.max(df, 1)) + 12;
    if (chi > bound) {
      return "chi-square "
          + chi
          + " over "
          + df
          + " degrees of freedom exceeds "
          + bound
          + "; counts "
          + Arrays.toString(counts)
          + " expected probabilities "
          + Arrays.toString(probs);
    }
    return null;
  }
}
