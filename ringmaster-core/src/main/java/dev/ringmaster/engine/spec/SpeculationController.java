package dev.ringmaster.engine.spec;

/**
 * Decides, step by step, how many draft tokens the batch engine proposes per request (0: plain
 * decoding), and counts what speculation did.
 *
 * <p>{@link SpeculativePolicy#ALWAYS} drafts the configured number every step. {@link
 * SpeculativePolicy#AUTO} keeps, per draft position {@code i}, a moving average {@code a_i} of
 * whether a proposed draft token there was accepted, so a draft of {@code k} tokens is expected to
 * yield {@code 1 + a_1 + ... + a_k} tokens per request, and a moving average of the drafting time
 * per draft token. For a step of {@code b} sequences it picks the {@code k} with the most expected
 * tokens per nanosecond, {@code b (1 + sum a_i) / (verify(b, k) + b k draft)}, and speculates only
 * if that beats plain decoding's {@code b / decode(b)} by the margin. The averages start at 1 (as
 * one observation), so speculation is tried until acceptance is known; while it is off, one step in
 * {@link #PROBE_INTERVAL} speculates anyway to keep the averages current, unless even drafts that
 * were always accepted could not pay at that batch size.
 *
 * <p>Called by the engine thread; the counters are read by others through {@link #snapshot}.
 */
public final class SpeculationController {
  /** While the policy is off, one decision in this many speculates to refresh the acceptance. */
  public static final int PROBE_INTERVAL = 128;

  /** Weight of the newest observation in the moving averages. */
  static final double SMOOTHING = 0.05;

  private final SpeculativeAlgorithm algorithm;
  private final SpeculativePolicy policy;
  private final int maxDraftTokens;
  private final double margin;
  private final SpeculationCostModel cost;
  private final double[] acceptance;
  private final long[] observed;
  private double draftNanosPerToken;
  private long decisions;
  private long enabledDecisions;
  private long verifyRows;
  private long draftTokens;
  private long acceptedTokens;
  private boolean lastEnabled;

  /**
   * A controller.
   *
   * @param maxDraftTokens draft tokens per request at most
   * @param margin how much more expected throughput than plain decoding {@code AUTO} asks for (0.05
   *     for 5%)
   * @param cost measured step costs; may be null for {@link SpeculativePolicy#ALWAYS}
   */
  public SpeculationController(
      SpeculativeAlgorithm algorithm,
      SpeculativePolicy policy,
      int maxDraftTokens,
      double margin,
      SpeculationCostModel cost) {
    if (maxDraftTokens < 1) {
      throw new IllegalArgumentException("draft tokens must be >= 1, got " + maxDraftTokens);
    }
    if (!(margin >= 0)) {
      throw new IllegalArgumentException("the speculation margin must be >= 0, got " + margin);
    }
    if (policy == SpeculativePolicy.AUTO && cost == null) {
      throw new IllegalArgumentException("the auto speculation policy needs a cost model");
    }
    this.algorithm = algorithm;
    this.policy = policy;
    this.maxDraftTokens = maxDraftTokens;
    this.margin = margin;
    this.cost = cost;
    this.acceptance = new double[maxDraftTokens];
    this.observed = new long[maxDraftTokens];
    java.util.Arrays.fill(acceptance, 1);
  }

  /** Draft tokens per request for the next step of {@code batch} sequences (0: no drafts). */
  public synchronized int decide(int batch) {
    int k = peek(batch);
    decisions++;
    if (k > 0) {
      enabledDecisions++;
    }
    lastEnabled = k > 0;
    return k;
  }

  /** Counts a decode step that was planned without asking (it runs plainly). */
  public synchronized void countPlain() {
    decisions++;
    lastEnabled = false;
  }

  /** What {@link #decide} would answer now, without counting it. */
  public synchronized int peek(int batch) {
    if (policy == SpeculativePolicy.ALWAYS) {
      return maxDraftTokens;
    }
    int b = Math.max(batch, 1);
    double plain = b / cost.decodeNanos(b);
    int best = 0;
    double bestRate = plain * (1 + margin);
    double sum = 1;
    boolean couldPay = false;
    for (int k = 1; k <= maxDraftTokens; k++) {
      sum += acceptance[k - 1];
      double time = cost.verifyNanos(b, k) + (double) b * k * draftNanosPerToken;
      double rate = b * sum / time;
      if (rate > bestRate) {
        best = k;
        bestRate = rate;
      }
      couldPay |= b * (k + 1.0) / time > plain * (1 + margin);
    }
    if (best == 0 && couldPay && decisions % PROBE_INTERVAL == PROBE_INTERVAL - 1) {
      return maxDraftTokens;
    }
    return best;
  }

  /** Records one verified draft: {@code proposed} tokens, of which the first {@code accepted}. */
  public synchronized void observe(int proposed, int accepted) {
    verifyRows++;
    draftTokens += proposed;
    acceptedTokens += accepted;
    for (int i = 0; i < proposed && i < acceptance.length; i++) {
      // The starting 1 counts as one observation: early averages are plain means.
      double weight = Math.max(SMOOTHING, 1.0 / (++observed[i] + 1));
      acceptance[i] += weight * ((i < accepted ? 1 : 0) - acceptance[i]);
    }
  }

  /** Records the time spent proposing {@code tokens} draft tokens (the drafters' own cost). */
  public synchronized void observeDraftTime(long nanos, int tokens) {
    if (tokens > 0) {
      double perToken = (double) nanos / tokens;
      draftNanosPerToken =
          draftNanosPerToken == 0
              ? perToken
              : draftNanosPerToken + SMOOTHING * (perToken - draftNanosPerToken);
    }
  }

  /** The counters and the current averages. */
  public synchronized SpeculationSnapshot snapshot() {
    return new SpeculationSnapshot(
        algorithm,
        policy,
        maxDraftTokens,
        margin,
        lastEnabled,
        decisions,
        enabledDecisions,
        verifyRows,
        draftTokens,
        acceptedTokens,
        acceptance.clone(),
        draftNanosPerToken);
  }
}
