package dev.ringmaster.runtime.sampling;

import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Times {@link RowSampler} on one row of a 129,280-token vocabulary (no JMH: a warm-up, then the
 * median of repeated draws). Run with the test classpath: {@code java ... RowSamplerTiming}.
 */
public final class RowSamplerTiming {
  private RowSamplerTiming() {}

  /** Prints microseconds per sampled token for a few parameter sets. */
  public static void main(String[] args) {
    int vocab = 129_280;
    SplittableRandom r = new SplittableRandom(1);
    float[] flat = new float[vocab];
    float[] peaked = new float[vocab];
    for (int i = 0; i < vocab; i++) {
      flat[i] = (float) (r.nextDouble() * 2 - 1); // a random model: almost uniform
      peaked[i] = (float) (r.nextGaussian() * 3); // a trained model's spread
    }
    time("flat, T 0.8 top-p 0.95", flat, 0.8f, 0, 0.95f, 0);
    time("peaked, T 0.8 top-p 0.95", peaked, 0.8f, 0, 0.95f, 0);
    time("peaked, T 1 top-k 50", peaked, 1f, 50, 1f, 0);
    time("peaked, T 0.7 top-k 40 top-p 0.9 min-p 0.05", peaked, 0.7f, 40, 0.9f, 0.05f);
    time("flat, greedy", flat, 0f, 0, 1f, 0);
  }

  private static void time(String what, float[] l, float t, int k, float p, float minP) {
    SamplingBatch b = new SamplingBatch();
    int reps = 400;
    double[] us = new double[reps];
    for (int round = 0; round < 2; round++) { // the first round warms up
      for (int i = 0; i < reps; i++) {
        b.clear();
        b.addRow(t, k, p, minP, 7, i, 1, 0, 0, -1);
        long t0 = System.nanoTime();
        b.sampleOnCpu(l, l.length);
        us[i] = (System.nanoTime() - t0) / 1e3;
      }
    }
    java.util.Arrays.sort(us);
    System.out.printf(
        Locale.ROOT,
        "%-48s median %7.1f us, p90 %7.1f us%n",
        what,
        us[reps / 2],
        us[reps * 9 / 10]);
  }
}
