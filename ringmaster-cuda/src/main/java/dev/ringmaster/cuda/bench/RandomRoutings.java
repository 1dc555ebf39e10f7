package dev.ringmaster.cuda.bench;

import java.util.SplittableRandom;

/**
 * Several random routings of {@code n} tokens to {@code topK} distinct experts each (weights {@code
 * 1 / topK}), laid out one routing after another, so that timed launches can cycle through them and
 * touch different experts; {@code activeTotal} counts the experts each routing uses, summed over
 * the routings.
 */
record RandomRoutings(int[] experts, float[] weights, long activeTotal) {
  static RandomRoutings of(SplittableRandom random, int routings, int n, int e, int topK) {
    int[] experts = new int[routings * n * topK];
    float[] weights = new float[routings * n * topK];
    long activeTotal = 0;
    for (int r = 0; r < routings; r++) {
      boolean[] used = new boolean[e];
      for (int t = 0; t < n; t++) {
        boolean[] mine = new boolean[e];
        for (int j = 0; j < topK; j++) {
          int pick;
          do {
            pick = random.nextInt(e);
          } while (mine[pick]);
          mine[pick] = true;
          used[pick] = true;
          experts[(r * n + t) * topK + j] = pick;
          weights[(r * n + t) * topK + j] = 1f / topK;
        }
      }
      for (boolean u : used) {
        activeTotal += u ? 1 : 0;
      }
    }
    return new RandomRoutings(experts, weights, activeTotal);
  }
}
