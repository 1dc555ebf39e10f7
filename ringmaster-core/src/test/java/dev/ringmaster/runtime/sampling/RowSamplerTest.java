package dev.ringmaster.runtime.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RowSamplerTest {
  private static final float[] LOGITS = {2f, 1f, 0.5f, 0f, -1f, 3f, 1.5f, -2f, 2.5f, 0.25f};
  private static final int DRAWS = 40_000;

  /** Draws {@link #DRAWS} tokens for one row's parameters, one per step, and counts them. */
  private static int[] counts(float[] logits, Row row) {
    int vocab = logits.length;
    SamplingBatch b = new SamplingBatch();
    int[] counts = new int[vocab];
    for (int step = 0; step < DRAWS; step++) {
      b.clear();
      row.add(b, 1234, step);
      counts[b.sampleOnCpu(logits, vocab).tokens()[0]]++;
    }
    return counts;
  }

  /** A row's parameters. */
  record Row(float t, int k, float p, float minP, float rep, float freq, float pres) {
    static Row of(float t, int k, float p, float minP) {
      return new Row(t, k, p, minP, 1, 0, 0);
    }

    void add(SamplingBatch b, long seed, long step) {
      b.addRow(t, k, p, minP, seed, step, rep, freq, pres, -1);
    }

    double[] probs(double[] adjusted) {
      return SamplingDistribution.probabilities(adjusted, t, k, p, minP);
    }
  }

  private static double[] raw(float[] logits) {
    return SamplingDistribution.adjusted(
        logits, new int[0], new float[0], new int[0], new int[0], 1, 0, 0);
  }

  @ParameterizedTest(name = "T={0} top_k={1} top_p={2} min_p={3}")
  @CsvSource({
    "1.0,0,1.0,0",
    "1.5,0,1.0,0",
    "0.7,0,1.0,0",
    "1.0,4,1.0,0",
    "1.0,0,0.8,0",
    "1.0,0,0.3,0",
    "1.2,6,0.9,0",
    "1.0,0,1.0,0.2",
    "0.8,5,0.95,0.1",
    "2.0,0,0.5,0.05"
  })
  void drawsFollowTheFilteredSoftmax(float t, int k, float p, float minP) {
    Row row = Row.of(t, k, p, minP);
    int[] c = counts(LOGITS, row);
    assertThat(SamplingDistribution.misfit(c, row.probs(raw(LOGITS)))).isNull();
  }

  @Test
  void eachFilterRemovesWhatItShould() {
    // top-k 3 keeps 3.0, 2.5, 2.0 (ids 5, 8, 0)
    assertThat(support(Row.of(1, 3, 1, 0))).containsExactly(0, 5, 8);
    // top-p at T=1: p(5)=.39, p(8)=.24, p(0)=.14 (cumulative .39, .63, .77)
    assertThat(support(Row.of(1, 0, 0.65f, 0))).containsExactly(0, 5, 8);
    assertThat(support(Row.of(1, 0, 0.5f, 0))).containsExactly(5, 8);
    assertThat(support(Row.of(1, 0, 0.3f, 0))).containsExactly(5);
    // min-p 0.5: weights exp(l - 3) >= 0.5 keeps 3.0 and 2.5 only
    assertThat(support(Row.of(1, 0, 1, 0.5f))).containsExactly(5, 8);
    // a low temperature sharpens: at T=0.1 the max carries all but 1e-2 of the mass
    int[] sharp = counts(LOGITS, Row.of(0.1f, 0, 1, 0));
    assertThat(sharp[5]).isGreaterThan(DRAWS * 99 / 100);
  }

  private static int[] support(Row row) {
    int[] c = counts(LOGITS, row);
    return java.util.stream.IntStream.range(0, c.length).filter(i -> c[i] > 0).toArray();
  }

  @Test
  void greedyTakesTheLowestIdAmongEqualMaxima() {
    float[] l = {1f, 4f, 2f, 4f, 0f};
    SamplingBatch b = new SamplingBatch();
    b.addRow(0, 0, 1, 0, 9, 0, 1, 0, 0, -1);
    b.addRow(0.9f, 1, 1, 0, 9, 0, 1, 0, 0, -1); // top-k 1 is greedy too
    b.addRow(1, 0, 1, 1f, 9, 0, 1, 0, 0, -1); // min-p 1 keeps the two maxima
    float[] rows = new float[15];
    for (int r = 0; r < 3; r++) {
      System.arraycopy(l, 0, rows, r * 5, 5);
    }
    int[] got = b.sampleOnCpu(rows, 5).tokens();
    assertThat(got[0]).isEqualTo(1);
    assertThat(got[1]).isEqualTo(1);
    assertThat(got[2]).isIn(1, 3);
  }

  @Test
  void theSameSeedAndStepGiveTheSameTokenAndOthersDiffer() {
    SplittableRandom r = new SplittableRandom(3);
    int vocab = 5000;
    float[] l = new float[vocab];
    for (int i = 0; i < vocab; i++) {
      l[i] = (float) r.nextGaussian() * 2;
    }
    int[] a = sequence(l, 77);
    assertThat(sequence(l, 77)).containsExactly(a);
    assertThat(sequence(l, 78)).isNotEqualTo(a);
    // different steps give different tokens (not one token repeated)
    assertThat(Arrays.stream(a).distinct().count()).isGreaterThan(20);
  }

  private static int[] sequence(float[] l, long seed) {
    SamplingBatch b = new SamplingBatch();
    int[] out = new int[64];
    for (int step = 0; step < out.length; step++) {
      b.clear();
      b.addRow(1, 0, 0.95f, 0, seed, step, 1, 0, 0, -1);
      out[step] = b.sampleOnCpu(l, l.length).tokens()[0];
    }
    return out;
  }

  @Test
  void penaltiesAndBiasChangeTheLogitsAsSpecified() {
    float[] l = {2f, -1f, 0.5f, 3f, 1f, -0.5f};
    SamplingBatch b = new SamplingBatch();
    b.addRow(1, 0, 1, 0, 5, 0, 2f, 0.5f, 0.25f, 0);
    // token 3 seen in the prompt only, 0 twice in the output, 1 once in the output
    b.addSeenToken(3, 0);
    b.addSeenToken(0, 2);
    b.addSeenToken(1, 1);
    b.addBias(4, 1.5f);
    b.addBias(1, -0.5f); // bias comes first: (-1 - 0.5) * 2 - 0.5 - 0.25
    SampledTokens s = b.sampleOnCpu(l, l.length);
    double[] want =
        SamplingDistribution.adjusted(
            l,
            new int[] {4, 1},
            new float[] {1.5f, -0.5f},
            new int[] {3, 0, 1},
            new int[] {0, 2, 1},
            2,
            0.5,
            0.25);
    assertThat(want)
        .containsExactly(new double[] {-0.25, -3.75, 0.5, 1.5, 2.5, -0.5}, within(1e-9));
    double lse = logSumExp(want);
    assertThat((double) s.logprobs()[0]).isCloseTo(want[s.tokens()[0]] - lse, within(1e-5));
  }

  @Test
  void penalizedAndBiasedDrawsFollowTheAdjustedSoftmax() {
    Row row = new Row(1, 0, 0.9f, 0, 1.3f, 0.4f, 0.6f);
    int[] seen = {5, 8, 0, 3};
    int[] out = {3, 1, 0, 2};
    int vocab = LOGITS.length;
    SamplingBatch b = new SamplingBatch();
    int[] c = new int[vocab];
    for (int step = 0; step < DRAWS; step++) {
      b.clear();
      row.add(b, 99, step);
      for (int e = 0; e < seen.length; e++) {
        b.addSeenToken(seen[e], out[e]);
      }
      b.addBias(7, 4f);
      c[b.sampleOnCpu(LOGITS, vocab).tokens()[0]]++;
    }
    double[] adj =
        SamplingDistribution.adjusted(
            LOGITS, new int[] {7}, new float[] {4f}, seen, out, 1.3, 0.4, 0.6);
    assertThat(SamplingDistribution.misfit(c, row.probs(adj))).isNull();
  }

  @Test
  void logprobsAreTheLogSoftmaxWithTopAlternatives() {
    SplittableRandom r = new SplittableRandom(11);
    int vocab = 129_280;
    float[] l = new float[vocab];
    for (int i = 0; i < vocab; i++) {
      l[i] = (float) (r.nextGaussian() * 3);
    }
    l[17] = 20f;
    l[40_000] = 20f; // a tie among the best: the lower id comes first
    SamplingBatch b = new SamplingBatch();
    b.addRow(0.8f, 0, 0.95f, 0, 1, 0, 1, 0, 0, 5);
    SampledTokens s = b.sampleOnCpu(l, vocab);
    double max = 20;
    double sum = 0;
    for (float v : l) {
      sum += Math.exp(v - max);
    }
    double lse = max + Math.log(sum);
    int token = s.tokens()[0];
    assertThat((double) s.logprobs()[0]).isCloseTo(l[token] - lse, within(1e-5));
    Integer[] order = new Integer[vocab];
    Arrays.setAll(order, i -> i);
    Arrays.sort(order, (x, y) -> Float.compare(l[y], l[x]));
    int[] ids = s.topIds(0, 5);
    assertThat(ids[0]).isEqualTo(17);
    assertThat(ids[1]).isEqualTo(40_000);
    for (int j = 0; j < 5; j++) {
      assertThat(ids[j]).isEqualTo(order[j]);
      assertThat((double) s.topLogprobs(0, 5)[j]).isCloseTo(l[order[j]] - lse, within(1e-5));
    }
  }

  /**
   * A mask of whole allowed words, empty words and mixed words (over vocabularies that end inside a
   * word, and masks shorter than the row): greedy is the arg-max over allowed tokens, draws and top
   * logprobs only see allowed ones, and a mask that allows nothing is refused.
   */
  @Test
  void masksRestrictGreedyDrawsAndLogprobsToAllowedTokens() {
    SplittableRandom r = new SplittableRandom(29);
    for (int vocab : new int[] {1, 63, 64, 65, 200, 1_000}) {
      for (int trial = 0; trial < 20; trial++) {
        float[] l = new float[vocab];
        for (int i = 0; i < vocab; i++) {
          l[i] = (float) (r.nextGaussian() * 2);
        }
        int words = (vocab + 63) >>> 6;
        long[] mask = new long[trial % 5 == 4 ? Math.max(1, words - 1) : words];
        for (int w = 0; w < mask.length; w++) {
          mask[w] =
              switch (r.nextInt(3)) {
                case 0 -> -1L;
                case 1 -> 0L;
                default -> r.nextLong();
              };
        }
        mask[0] |= 1L; // token 0 is always allowed: some token is
        boolean[] allowed = new boolean[vocab];
        int best = -1;
        for (int t = 0; t < vocab; t++) {
          allowed[t] = (t >>> 6) < mask.length && (mask[t >>> 6] & (1L << t)) != 0;
          if (allowed[t] && (best < 0 || l[t] > l[best])) {
            best = t;
          }
        }
        SamplingBatch b = new SamplingBatch();
        b.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, 3);
        b.setAllowedTokens(mask);
        b.addRow(1.5f, 0, 1, 0, 9, trial, 1, 0, 0, 3);
        b.setAllowedTokens(mask);
        SampledTokens out = b.sampleOnCpu(concat(l, l), vocab);
        assertThat(out.tokens()[0]).as("vocab %d trial %d", vocab, trial).isEqualTo(best);
        assertThat(allowed[out.tokens()[1]]).as("vocab %d trial %d", vocab, trial).isTrue();
        for (int row = 0; row < 2; row++) {
          int[] ids = out.topIds(row, 3);
          float[] logprobs = out.topLogprobs(row, 3);
          for (int j = 0; j < ids.length; j++) {
            // Fewer allowed tokens than alternatives asked for: the rest come at -inf.
            assertThat(allowed[ids[j]] || logprobs[j] == Float.NEGATIVE_INFINITY)
                .as("vocab %d trial %d top id %d", vocab, trial, ids[j])
                .isTrue();
          }
        }
      }
    }
    SamplingBatch none = new SamplingBatch();
    none.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, -1);
    none.setAllowedTokens(new long[] {0L, 0L});
    assertThatThrownBy(() -> none.sampleOnCpu(new float[100], 100))
        .hasMessageContaining("allows no token");
  }

  private static float[] concat(float[] a, float[] b) {
    float[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  @Test
  void theBatchEqualsEachRowSampledAlone() {
    SplittableRandom r = new SplittableRandom(5);
    int vocab = 3000;
    Row[] rows = {
      Row.of(0, 0, 1, 0),
      Row.of(0.8f, 0, 0.95f, 0),
      Row.of(1.2f, 40, 1, 0),
      Row.of(1, 0, 1, 0.05f),
      new Row(0.7f, 20, 0.9f, 0.01f, 1.2f, 0.3f, 0.2f),
    };
    float[] logits = new float[rows.length * vocab];
    for (int i = 0; i < logits.length; i++) {
      logits[i] = (float) (r.nextGaussian() * 2);
    }
    SamplingBatch all = new SamplingBatch();
    for (int i = 0; i < rows.length; i++) {
      rows[i].add(all, 100 + i, 7);
      all.addSeenToken(3, 1);
      all.addBias(i, 2f);
    }
    SampledTokens together = all.sampleOnCpu(logits, vocab);
    for (int i = 0; i < rows.length; i++) {
      SamplingBatch one = new SamplingBatch();
      rows[i].add(one, 100 + i, 7);
      one.addSeenToken(3, 1);
      one.addBias(i, 2f);
      float[] row = Arrays.copyOfRange(logits, i * vocab, (i + 1) * vocab);
      assertThat(one.sampleOnCpu(row, vocab).tokens()[0])
          .as("row %d", i)
          .isEqualTo(together.tokens()[i]);
    }
  }

  @Test
  void largeTopKUsesSelectionAndKeepsTies() {
    int vocab = 20_000;
    float[] l = new float[vocab];
    for (int i = 0; i < vocab; i++) {
      l[i] = (i % 100) / 10f; // every value 200 times
    }
    SamplingBatch b = new SamplingBatch();
    // top-k 5000: the k-th largest is 7.5, and all 200 of its ties stay (5000 tokens exactly)
    for (int step = 0; step < 2000; step++) {
      b.clear();
      b.addRow(0.5f, 5000, 1, 0, 3, step, 1, 0, 0, -1);
      int t = b.sampleOnCpu(l, vocab).tokens()[0];
      assertThat(l[t]).isGreaterThanOrEqualTo(7.5f);
    }
  }

  @Test
  void outOfVocabularyBiasIsRefused() {
    SamplingBatch b = new SamplingBatch();
    b.addRow(1, 0, 1, 0, 1, 0, 1, 0, 0, -1);
    b.addBias(10, 1f);
    assertThatThrownBy(() -> b.sampleOnCpu(new float[10], 10))
        .hasMessageContaining("logit bias id 10 is outside the vocabulary");
  }

  @Test
  void selectionFindsTheKthLargest() {
    SplittableRandom r = new SplittableRandom(2);
    for (int trial = 0; trial < 200; trial++) {
      int n = 1 + r.nextInt(500);
      float[] a = new float[n];
      for (int i = 0; i < n; i++) {
        a[i] = r.nextInt(20); // many repeats
      }
      int k = 1 + r.nextInt(n);
      float[] sorted = a.clone();
      Arrays.sort(sorted);
      assertThat(Selection.kthLargest(a.clone(), n, k)).isEqualTo(sorted[n - k]);
    }
  }

  private static double logSumExp(double[] x) {
    double m = Arrays.stream(x).max().orElseThrow();
    double s = 0;
    for (double v : x) {
      s += Math.exp(v - m);
    }
    return m + Math.log(s);
  }
}
