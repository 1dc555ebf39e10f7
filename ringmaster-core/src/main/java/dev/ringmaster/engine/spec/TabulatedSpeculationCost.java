package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Decode and verify costs at a few batch sizes, interpolated linearly in between (and extrapolated
 * per sequence beyond the largest); the verify cost of fewer draft tokens than were measured is
 * interpolated between the decode cost (0 drafts) and the measured verify cost.
 *
 * @param batchSizes measured batch sizes, ascending, at least one
 * @param decodeNanos decode step cost at each batch size
 * @param verifyNanos verify step cost at each batch size with {@code draftTokens} drafts each
 * @param draftTokens draft tokens per sequence of the measured verify steps
 */
public record TabulatedSpeculationCost(
    int[] batchSizes, double[] decodeNanos, double[] verifyNanos, int draftTokens)
    implements SpeculationCostModel {

  /** Checks that the three tables line up. */
  public TabulatedSpeculationCost {
    if (batchSizes.length == 0
        || decodeNanos.length != batchSizes.length
        || verifyNanos.length != batchSizes.length) {
      throw new IllegalArgumentException(
          "a cost table needs one decode and one verify cost per batch size");
    }
    for (int i = 1; i < batchSizes.length; i++) {
      if (batchSizes[i] <= batchSizes[i - 1]) {
        throw new IllegalArgumentException(
            "cost table batch sizes must ascend: " + Arrays.toString(batchSizes));
      }
    }
    if (draftTokens < 1) {
      throw new IllegalArgumentException("draft tokens must be >= 1, got " + draftTokens);
    }
  }

  @Override
  public double decodeNanos(int batch) {
    return interpolate(decodeNanos, batch);
  }

  @Override
  public double verifyNanos(int batch, int k) {
    double decode = decodeNanos(batch);
    double full = interpolate(verifyNanos, batch);
    return decode + (full - decode) * k / draftTokens;
  }

  private double interpolate(double[] table, int batch) {
    int last = batchSizes.length - 1;
    if (batch <= batchSizes[0]) {
      return table[0];
    }
    if (batch >= batchSizes[last]) {
      return table[last] * batch / batchSizes[last];
    }
    int i = 1;
    while (batchSizes[i] < batch) {
      i++;
    }
    double f = (double) (batch - batchSizes[i - 1]) / (batchSizes[i] - batchSizes[i - 1]);
    return table[i - 1] + f * (table[i] - table[i - 1]);
  }

  /**
   * The batch sizes to measure for an engine of at most {@code maxRunning} sequences: powers of two
   * up to 128 and below {@code maxRunning}, then {@code maxRunning} itself if it is at most 128.
   */
  public static int[] batchSizesFor(int maxRunning) {
    List<Integer> sizes = new ArrayList<>();
    for (int b = 1; b < maxRunning && b <= 128; b *= 2) {
      sizes.add(b);
    }
    if (maxRunning <= 128) {
      sizes.add(maxRunning);
    }
    return sizes.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * Times one decode step and one verify step of {@code draftTokens} drafts at each batch size on
   * {@code model} (median of three after a warm-up, caches holding a short context), then frees the
   * caches it made.
   */
  public static TabulatedSpeculationCost measure(
      LanguageModel model, int[] batchSizes, int draftTokens) {
    int context = 16;
    int vocab = model.config().vocabSize();
    double[] decode = new double[batchSizes.length];
    double[] verify = new double[batchSizes.length];
    for (int s = 0; s < batchSizes.length; s++) {
      int b = batchSizes[s];
      KvCache[] caches = new KvCache[b];
      try {
        for (int i = 0; i < b; i++) {
          caches[i] = model.newCache();
        }
        forward(model, caches, context, 0, vocab);
        decode[s] = median(model, caches, 1, context, vocab);
        verify[s] = median(model, caches, draftTokens + 1, context, vocab);
      } finally {
        for (KvCache c : caches) {
          if (c != null) {
            c.close();
          }
        }
      }
    }
    return new TabulatedSpeculationCost(batchSizes.clone(), decode, verify, draftTokens);
  }

  private static double median(
      LanguageModel model, KvCache[] caches, int tokens, int context, int vocab) {
    double[] t = new double[4];
    for (int r = 0; r < t.length; r++) {
      long t0 = System.nanoTime();
      forward(model, caches, tokens, context, vocab);
      t[r] = System.nanoTime() - t0;
      for (KvCache c : caches) {
        c.setLength(context);
      }
    }
    double[] timed = Arrays.copyOfRange(t, 1, t.length); // the first is a warm-up
    Arrays.sort(timed);
    return timed[timed.length / 2];
  }

  /** One forward of {@code tokens} tokens per cache from {@code start}, logits for every row. */
  private static void forward(
      LanguageModel model, KvCache[] caches, int tokens, int start, int vocab) {
    int b = caches.length;
    int[] ids = new int[b * tokens];
    int[] positions = new int[b * tokens];
    int[] seqStart = new int[b + 1];
    int[] rows = new int[b * tokens];
    for (int i = 0; i < b; i++) {
      seqStart[i] = i * tokens;
      for (int j = 0; j < tokens; j++) {
        int t = i * tokens + j;
        ids[t] = (1 + i * 7 + j * 13) % vocab;
        positions[t] = start + j;
        rows[t] = t;
      }
    }
    seqStart[b] = b * tokens;
    model.forward(ids, new BatchLayout(seqStart, positions), caches, rows);
  }
}
