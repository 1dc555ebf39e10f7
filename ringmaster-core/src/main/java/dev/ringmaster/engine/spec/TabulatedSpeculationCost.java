package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Decode and verify costs at a few batch sizes, interpolated linearly in between (and extrapolated
 * per sequence beyond the largest).
 *
 * @param batchSizes measured batch sizes, ascending, at least one
 * @param decodeNanos decode step cost at each batch size
 * @param verifyNanos verify step cost at each batch size ({@code [size][k - 1]} for {@code k}
 *     drafts per sequence, {@code k} from 1 to {@code draftTokens})
 * @param draftTokens most draft tokens per sequence measured
 */
public record TabulatedSpeculationCost(
    int[] batchSizes, double[] decodeNanos, double[][] verifyNanos, int draftTokens)
    implements SpeculationCostModel {

  /** Checks that the tables line up. */
  public TabulatedSpeculationCost {
    if (batchSizes.length == 0
        || decodeNanos.length != batchSizes.length
        || verifyNanos.length != batchSizes.length) {
      throw new IllegalArgumentException(
          "a cost table needs one decode and one verify row per batch size");
    }
    for (double[] row : verifyNanos) {
      if (row.length != draftTokens) {
        throw new IllegalArgumentException(
            "a cost table needs a verify cost for each draft length 1.." + draftTokens);
      }
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

  /**
   * A table from a verify cost that grows linearly in the draft tokens: {@code decode(b) (1 + slope
   * k)} at every batch size {@code b} of {@code decodeNanos}.
   */
  public static TabulatedSpeculationCost linear(
      int[] batchSizes, double[] decodeNanos, double slope, int draftTokens) {
    double[][] verify = new double[batchSizes.length][draftTokens];
    for (int b = 0; b < batchSizes.length; b++) {
      for (int k = 1; k <= draftTokens; k++) {
        verify[b][k - 1] = decodeNanos[b] * (1 + slope * k);
      }
    }
    return new TabulatedSpeculationCost(batchSizes, decodeNanos, verify, draftTokens);
  }

  @Override
  public double decodeNanos(int batch) {
    return interpolate(decodeNanos, batch);
  }

  @Override
  public double verifyNanos(int batch, int k) {
    if (k < 1 || k > draftTokens) {
      throw new IllegalArgumentException(
          "verify costs are known for 1.." + draftTokens + " draft tokens, not " + k);
    }
    double[] column = new double[batchSizes.length];
    for (int b = 0; b < column.length; b++) {
      column[b] = verifyNanos[b][k - 1];
    }
    return interpolate(column, batch);
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
   * Times one decode step, and one verify step for each draft length 1..{@code draftTokens}, at
   * each batch size on {@code model} (the fastest of five after a warm-up, caches holding a short
   * context), then frees the caches it made.
   */
  public static TabulatedSpeculationCost measure(
      LanguageModel model, int[] batchSizes, int draftTokens) {
    int context = 16;
    int vocab = model.config().vocabSize();
    double[] decode = new double[batchSizes.length];
    double[][] verify = new double[batchSizes.length][draftTokens];
    for (int s = 0; s < batchSizes.length; s++) {
      int b = batchSizes[s];
      KvCache[] caches = new KvCache[b];
      try {
        for (int i = 0; i < b; i++) {
          caches[i] = model.newCache();
        }
        forward(model, caches, context, 0, vocab);
        decode[s] = fastest(model, caches, 1, context, vocab);
        for (int k = 1; k <= draftTokens; k++) {
          verify[s][k - 1] = fastest(model, caches, k + 1, context, vocab);
        }
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

  /** The fastest of five timed forwards after a warm-up: other load only ever adds time. */
  private static double fastest(
      LanguageModel model, KvCache[] caches, int tokens, int context, int vocab) {
    double best = Double.POSITIVE_INFINITY;
    for (int r = 0; r < 6; r++) {
      long t0 = System.nanoTime();
      forward(model, caches, tokens, context, vocab);
      long t = System.nanoTime() - t0;
      if (r > 0) {
        best = Math.min(best, t);
      }
      for (KvCache c : caches) {
        c.setLength(context);
      }
    }
    return best;
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
