package dev.ringmaster.runtime.sampling;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * The sampling inputs of one step: per row (one per requested logits row, in order) its parameters,
 * seed and step counter, and variable-length lists in CSR form (row {@code r}'s entries are {@code
 * [start[r], start[r + 1])}): the tokens seen so far with their output counts (for penalties) and
 * the logit bias entries. Everything is a primitive array, so a device backend copies them into
 * fixed buffers as they are; arrays may be longer than {@link #rows()} (they are reused). Reusable:
 * {@link #clear()} and fill again each step. Not thread-safe.
 *
 * <p>Row semantics (the same on every backend; {@link RowSampler} is the reference): temperature 0
 * or top-k 1 picks the argmax (lowest id on ties); top-k 0 and top-p 1 and min-p 0 are off; the
 * random draw of a row is a function of (seed, step) only.
 */
public final class SamplingBatch {
  private int rows;
  private float[] temperature = new float[8];
  private int[] topK = new int[8];
  private float[] topP = new float[8];
  private float[] minP = new float[8];
  private long[] seed = new long[8];
  private long[] step = new long[8];
  private float[] repetitionPenalty = new float[8];
  private float[] frequencyPenalty = new float[8];
  private float[] presencePenalty = new float[8];
  private int[] topLogprobs = new int[8];
  private int[] penaltyStart = new int[9];
  private int[] penaltyTokens = new int[64];
  private int[] penaltyCounts = new int[64];
  private int[] biasStart = new int[9];
  private int[] biasTokens = new int[16];
  private float[] biasValues = new float[16];
  private long[][] allowed = new long[8][];
  private CompletableFuture<long[]>[] pendingAllowed = newPending(8);
  private int masked;
  private RowSampler sampler;

  /** Empties the batch (keeps the arrays). */
  public void clear() {
    rows = 0;
    masked = 0;
    penaltyStart[0] = 0;
    biasStart[0] = 0;
  }

  /**
   * Appends a row; its penalty and bias entries follow with {@link #addSeenToken} and {@link
   * #addBias} before the next row is added.
   *
   * @param temperature 0 = greedy
   * @param topK 0 = off
   * @param topP 1 = off
   * @param minP 0 = off
   * @param seed the request's seed
   * @param step the request's step counter: the index of the token being chosen among its outputs
   * @param repetitionPenalty 1 = off
   * @param frequencyPenalty 0 = off
   * @param presencePenalty 0 = off
   * @param topLogprobs -1 no logprobs, 0 the chosen token's, n also the n most likely tokens
   * @return the row's index
   */
  public int addRow(
      float temperature,
      int topK,
      float topP,
      float minP,
      long seed,
      long step,
      float repetitionPenalty,
      float frequencyPenalty,
      float presencePenalty,
      int topLogprobs) {
    if (!(temperature >= 0) || !(topP > 0 && topP <= 1) || !(minP >= 0 && minP <= 1)) {
      throw new IllegalArgumentException(
          "row "
              + rows
              + ": temperature must be >= 0, top_p in (0, 1] and min_p in [0, 1], got "
              + temperature
              + ", "
              + topP
              + ", "
              + minP);
    }
    if (rows == this.temperature.length) {
      int n = rows * 2;
      this.temperature = Arrays.copyOf(this.temperature, n);
      this.topK = Arrays.copyOf(this.topK, n);
      this.topP = Arrays.copyOf(this.topP, n);
      this.minP = Arrays.copyOf(this.minP, n);
      this.seed = Arrays.copyOf(this.seed, n);
      this.step = Arrays.copyOf(this.step, n);
      this.repetitionPenalty = Arrays.copyOf(this.repetitionPenalty, n);
      this.frequencyPenalty = Arrays.copyOf(this.frequencyPenalty, n);
      this.presencePenalty = Arrays.copyOf(this.presencePenalty, n);
      this.topLogprobs = Arrays.copyOf(this.topLogprobs, n);
      penaltyStart = Arrays.copyOf(penaltyStart, n + 1);
      biasStart = Arrays.copyOf(biasStart, n + 1);
      allowed = Arrays.copyOf(allowed, n);
      pendingAllowed = Arrays.copyOf(pendingAllowed, n);
    }
    int r = rows++;
    this.temperature[r] = temperature;
    this.topK[r] = Math.max(0, topK);
    this.topP[r] = topP;
    this.minP[r] = minP;
    this.seed[r] = seed;
    this.step[r] = step;
    this.repetitionPenalty[r] = repetitionPenalty;
    this.frequencyPenalty[r] = frequencyPenalty;
    this.presencePenalty[r] = presencePenalty;
    this.topLogprobs[r] = topLogprobs;
    this.allowed[r] = null;
    this.pendingAllowed[r] = null;
    penaltyStart[r + 1] = penaltyStart[r];
    biasStart[r + 1] = biasStart[r];
    return r;
  }

  /**
   * Records for the last row a distinct token seen in its prompt or output, with the number of
   * times it occurs in the output (0 when only in the prompt).
   */
  public void addSeenToken(int token, int outputCount) {
    int n = penaltyStart[rows];
    if (n == penaltyTokens.length) {
      penaltyTokens = Arrays.copyOf(penaltyTokens, n * 2);
      penaltyCounts = Arrays.copyOf(penaltyCounts, n * 2);
    }
    penaltyTokens[n] = token;
    penaltyCounts[n] = outputCount;
    penaltyStart[rows] = n + 1;
  }

  /** Adds {@code value} to the last row's logit of {@code token}, before everything else. */
  public void addBias(int token, float value) {
    int n = biasStart[rows];
    if (n == biasTokens.length) {
      biasTokens = Arrays.copyOf(biasTokens, n * 2);
      biasValues = Arrays.copyOf(biasValues, n * 2);
    }
    biasTokens[n] = token;
    biasValues[n] = value;
    biasStart[rows] = n + 1;
  }

  /**
   * Restricts the last row to the tokens whose bits are set in {@code mask} (bit {@code t % 64} of
   * word {@code t / 64}; a constraint's allowed tokens): the others get logit -inf after bias and
   * penalties. The array is shared, not copied, and must stay unchanged until the step is sampled.
   */
  public void setAllowedTokens(long[] mask) {
    if (rows == 0) {
      throw new IllegalStateException("add a row before its allowed tokens");
    }
    if (allowed[rows - 1] == null && pendingAllowed[rows - 1] == null) {
      masked++;
    }
    allowed[rows - 1] = mask;
    pendingAllowed[rows - 1] = null;
  }

  /**
   * Restricts the last row like {@link #setAllowedTokens(long[])} with a mask still being computed
   * (off the engine thread, while the forward runs): the sampler waits for it when it reaches the
   * row, so the mask only has to be ready before the logits are.
   */
  public void setAllowedTokens(CompletableFuture<long[]> mask) {
    if (mask.isDone() && !mask.isCompletedExceptionally()) {
      setAllowedTokens(mask.join());
      return;
    }
    if (rows == 0) {
      throw new IllegalStateException("add a row before its allowed tokens");
    }
    if (allowed[rows - 1] == null && pendingAllowed[rows - 1] == null) {
      masked++;
    }
    allowed[rows - 1] = null;
    pendingAllowed[rows - 1] = mask;
  }

  /**
   * Row {@code r}'s allowed-token mask, or null when every token is allowed; waits for a mask that
   * is still being computed.
   *
   * @throws java.util.concurrent.CompletionException when computing the mask failed
   */
  public long[] allowedTokens(int r) {
    long[] m = allowed[r];
    if (m == null && pendingAllowed[r] != null) {
      m = pendingAllowed[r].join();
    }
    return m;
  }

  @SuppressWarnings("unchecked")
  private static CompletableFuture<long[]>[] newPending(int n) {
    return (CompletableFuture<long[]>[]) new CompletableFuture<?>[n];
  }

  /**
   * Whether some row has an allowed-token mask: device samplers without masks sample such a batch
   * on the host.
   */
  public boolean hasAllowedTokenMasks() {
    return masked > 0;
  }

  /** Refuses a step that asks for {@code logitRows} rows of logits but samples another count. */
  public void checkRows(int logitRows) {
    if (rows != logitRows) {
      throw new IllegalArgumentException(
          "the sampling batch has "
              + rows
              + " rows but "
              + logitRows
              + " logits rows were requested");
    }
  }

  /** Number of rows. */
  public int rows() {
    return rows;
  }

  /**
   * Whether row {@code r} takes the argmax of its raw logits (no penalty, no bias, no mask, no
   * logprobs).
   */
  public boolean isRawGreedy(int r) {
    return (temperature[r] == 0 || topK[r] == 1)
        && topLogprobs[r] < 0
        && !hasPenalties(r)
        && biasStart[r + 1] == biasStart[r]
        && allowed[r] == null
        && pendingAllowed[r] == null;
  }

  /** Whether every row is {@linkplain #isRawGreedy raw greedy}. */
  public boolean allRawGreedy() {
    for (int r = 0; r < rows; r++) {
      if (!isRawGreedy(r)) {
        return false;
      }
    }
    return true;
  }

  /** Whether row {@code r} has a repetition, frequency or presence penalty. */
  public boolean hasPenalties(int r) {
    return repetitionPenalty[r] != 1 || frequencyPenalty[r] != 0 || presencePenalty[r] != 0;
  }

  /** The largest {@code topLogprobs} of any row (0 when none asks for alternatives). */
  public int maxTopLogprobs() {
    int m = 0;
    for (int r = 0; r < rows; r++) {
      m = Math.max(m, topLogprobs[r]);
    }
    return m;
  }

  /** Seen-token entries of all rows. */
  public int seenTokenEntries() {
    return penaltyStart[rows];
  }

  /** Logit bias entries of all rows. */
  public int biasEntries() {
    return biasStart[rows];
  }

  /** Per-row temperature. */
  public float[] temperature() {
    return temperature;
  }

  /** Per-row top-k (0 = off). */
  public int[] topK() {
    return topK;
  }

  /** Per-row top-p (1 = off). */
  public float[] topP() {
    return topP;
  }

  /** Per-row min-p (0 = off). */
  public float[] minP() {
    return minP;
  }

  /** Per-row seed. */
  public long[] seed() {
    return seed;
  }

  /** Per-row step counter (index of the output token being chosen). */
  public long[] step() {
    return step;
  }

  /** Per-row repetition penalty (1 = off). */
  public float[] repetitionPenalty() {
    return repetitionPenalty;
  }

  /** Per-row frequency penalty (0 = off). */
  public float[] frequencyPenalty() {
    return frequencyPenalty;
  }

  /** Per-row presence penalty (0 = off). */
  public float[] presencePenalty() {
    return presencePenalty;
  }

  /** Per-row logprobs request: -1 none, 0 the chosen token's, n also n alternatives. */
  public int[] topLogprobs() {
    return topLogprobs;
  }

  /** CSR starts of the seen-token lists, {@code rows + 1} entries. */
  public int[] seenStart() {
    return penaltyStart;
  }

  /** Seen tokens (distinct within a row). */
  public int[] seenTokens() {
    return penaltyTokens;
  }

  /** Output counts of the seen tokens (0 = only in the prompt). */
  public int[] seenCounts() {
    return penaltyCounts;
  }

  /** CSR starts of the logit bias lists, {@code rows + 1} entries. */
  public int[] biasStart() {
    return biasStart;
  }

  /** Logit bias token ids. */
  public int[] biasTokens() {
    return biasTokens;
  }

  /** Logit bias values. */
  public float[] biasValues() {
    return biasValues;
  }

  /**
   * Samples every row on the CPU from {@code logits [rows, vocab]} (row {@code r} at {@code r *
   * vocab}); the batch keeps the sampler's scratch between calls.
   */
  public SampledTokens sampleOnCpu(float[] logits, int vocab) {
    return sampleOnCpu(logits, 0, vocab);
  }

  /** Like {@link #sampleOnCpu(float[], int)} with row {@code r} at {@code offset + r * vocab}. */
  public SampledTokens sampleOnCpu(float[] logits, int offset, int vocab) {
    if ((long) offset + (long) rows * vocab > logits.length) {
      throw new IllegalArgumentException(
          rows + " rows of " + vocab + " logits at " + offset + " exceed " + logits.length);
    }
    if (sampler == null || sampler.vocab() != vocab) {
      sampler = new RowSampler(vocab);
    }
    SampledTokens out = SampledTokens.forBatch(this);
    for (int r = 0; r < rows; r++) {
      sampler.sample(logits, offset + r * vocab, this, r, out);
    }
    return out;
  }

  /**
   * Appends row {@code r} of {@code from} (its parameters, seen tokens and bias entries) as a new
   * row: how a backend samples a subset of a step's rows at a time.
   */
  public void addRowOf(SamplingBatch from, int r) {
    addRow(
        from.temperature[r],
        from.topK[r],
        from.topP[r],
        from.minP[r],
        from.seed[r],
        from.step[r],
        from.repetitionPenalty[r],
        from.frequencyPenalty[r],
        from.presencePenalty[r],
        from.topLogprobs[r]);
    for (int i = from.penaltyStart[r]; i < from.penaltyStart[r + 1]; i++) {
      addSeenToken(from.penaltyTokens[i], from.penaltyCounts[i]);
    }
    for (int i = from.biasStart[r]; i < from.biasStart[r + 1]; i++) {
      addBias(from.biasTokens[i], from.biasValues[i]);
    }
    if (from.allowed[r] != null) {
      setAllowedTokens(from.allowed[r]);
    } else if (from.pendingAllowed[r] != null) {
      setAllowedTokens(from.pendingAllowed[r]);
    }
  }
}
