package dev.ringmaster.engine.bench;

import dev.ringmaster.engine.JitSettling;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.CollectiveReporting;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.StepProfileReporting;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Static-batch latency benchmark without a server, in the manner of {@code sglang.bench_one_batch}:
 * for each batch size, one prefill of {@code batch} random prompts of {@code inputLen} tokens, then
 * {@code outputLen} greedy decode steps of the whole batch, reported per batch size as prefill,
 * median decode step and "Total" (prefill plus the decode steps a served request of {@code
 * outputLen} tokens needs, with the throughput over it). A {@link Warmup} of the same prompts
 * (prefills, then decode steps, into caches that are then dropped) runs first for every batch size
 * and is not timed: a first launch pays one-off costs (GEMM heuristics, kernels and graphs loaded
 * on first use, JIT compilation) that a running server has already paid for each shape, and the
 * batch size listed first would otherwise carry them. The JVM compiles the CPU kernels' hottest
 * loops only after hundreds of forward steps, so the default warm-up is long enough for the CPU
 * figures to be steady state.
 *
 * <p>With draft lengths given, each batch size also times a speculative verify pass per length
 * ({@link VerifyCost}) against its decode step, over the decoded random context and over a
 * repeating text (where all rows of a sequence route to the same experts).
 */
public final class OneBatchBenchmark {
  /**
   * What a speculative verify pass of {@code draftTokens} drafts costs at one batch size: every
   * sequence extends by the draft tokens plus one over its cached context ({@code input-len +
   * output-len} tokens), with the argmax of every new row as the batch engine verifies greedy
   * drafts (the device picks them; logits stay where they are), and is then rolled back; timed
   * after untimed passes of the same shape, median of the timed ones.
   *
   * @param draftTokens draft tokens per sequence (the pass runs one more per sequence)
   * @param medianMs median verify pass latency
   * @param decodeSteps the pass over the batch size's median decode step: what the pass costs in
   *     decode steps, the figure speculation must beat with accepted tokens
   * @param repeatMedianMs median verify pass over a repeating text (see {@link #timeRepeating}):
   *     every row of a sequence routes to the same experts
   * @param repeatDecodeSteps {@code repeatMedianMs} over the median decode step of that text
   */
  public record VerifyCost(
      int draftTokens,
      double medianMs,
      double decodeSteps,
      double repeatMedianMs,
      double repeatDecodeSteps) {}

  /**
   * The untimed work before each batch size's timed steps: rounds, each a prefill of the batch's
   * prompts and {@code decodeSteps} decode steps of the whole batch. Prefill and decode share the
   * kernels, so rounds alternate them as a timed run does: the JIT then compiles code profiled on
   * both shapes instead of recompiling when the timed prefill follows a long decode.
   *
   * <p>With {@code untilJitSettles}, {@code rounds} is a minimum: rounds go on until the JIT has
   * settled ({@link JitSettling}: its compilation time over the last {@value JitSettling#WINDOW}
   * rounds, or the last 3 or more that took 2 s, under {@value JitSettling#SHARE_PERCENT}% of their
   * wall time), at most {@value #MAX_ROUNDS} rounds. On a 2-core CPU the compiler threads share the
   * cores with the kernels' threads, and the embedded model's prefill takes 30-50 rounds to reach
   * its steady speed (2x the speed after 4 rounds).
   *
   * @param rounds rounds of a prefill and decode steps, at least 1 (with {@code untilJitSettles},
   *     the fewest)
   * @param decodeSteps decode steps per round, at least 0
   * @param untilJitSettles whether rounds go on until the JIT settles
   */
  public record Warmup(int rounds, int decodeSteps, boolean untilJitSettles) {
    /** The most rounds a warm-up that waits for the JIT runs per batch size. */
    public static final int MAX_ROUNDS = 200;

    /**
     * The default: at least 4 rounds of a prefill and 64 decode steps, then more until the JIT has
     * settled.
     */
    public static final Warmup DEFAULT = new Warmup(4, 64, true);

    /** Checks the counts. */
    public Warmup {
      if (rounds < 1) {
        throw new IllegalArgumentException(
            "--warmup-rounds must be at least 1 (the timed prefill must not be the first), got "
                + rounds);
      }
      if (decodeSteps < 0) {
        throw new IllegalArgumentException(
            "--warmup-decode-steps must not be negative, got " + decodeSteps);
      }
    }

    /** A fixed number of rounds. */
    public Warmup(int rounds, int decodeSteps) {
      this(rounds, decodeSteps, false);
    }

    /** One line for the benchmark's output. */
    public String describe() {
      String what = " of a prefill and " + decodeSteps + " decode steps of the same prompts";
      if (untilJitSettles) {
        return "warm-up per batch size (untimed): rounds"
            + what
            + ", at least "
            + rounds
            + ", then until the JIT settles (compilation under "
            + JitSettling.SHARE_PERCENT
            + "% of the last "
            + JitSettling.WINDOW
            + " rounds' time, or of the last 3 or more that took 2 s; at most "
            + MAX_ROUNDS
            + ")";
      }
      return "warm-up per batch size (untimed): "
          + rounds
          + (rounds == 1 ? " round" : " rounds")
          + what;
    }
  }

  /**
   * One batch size's figures.
   *
   * @param batchSize sequences
   * @param inputLen prompt tokens per sequence
   * @param outputLen generated tokens per sequence
   * @param prefillMs prefill latency
   * @param prefillTokensPerS prompt tokens per second
   * @param decodeMedianMs median decode step latency
   * @param decodeTokensPerS generated tokens per second over all sequences (batch / median step)
   * @param collectivesPerDecodeStep collectives one decode step issues ("OP bytes" to count); empty
   *     on a single rank
   * @param profileMs the model's op-group breakdown of the steps it profiled for this batch size
   *     (step name to milliseconds per op group); empty unless profiling was asked for
   * @param totalLatencyMs what sglang.bench_one_batch prints as "Total": the prefill plus the first
   *     {@code outputLen - 1} decode steps, the steps a served request of {@code outputLen} tokens
   *     runs (its prefill samples the first token); 0 where not measured (results read from JSON
   *     that predates it)
   * @param totalOutputTokensPerS generated tokens over that latency: {@code batch x outputLen /
   *     totalLatency}, the most a server running this batch from prefill to its last token can
   *     deliver (0 where not measured)
   * @param totalTokensPerS sglang's "Total" throughput: {@code (inputLen + outputLen) x batch /
   *     totalLatency} (0 where not measured)
   * @param verify the verify passes timed (none unless draft lengths were given)
   * @param warmupRounds warm-up rounds run before this batch size was timed (0 where not recorded)
   */
  public record Result(
      int batchSize,
      int inputLen,
      int outputLen,
      double prefillMs,
      double prefillTokensPerS,
      double decodeMedianMs,
      double decodeTokensPerS,
      java.util.Map<String, Long> collectivesPerDecodeStep,
      java.util.Map<String, java.util.Map<String, Double>> profileMs,
      double totalLatencyMs,
      double totalOutputTokensPerS,
      double totalTokensPerS,
      List<VerifyCost> verify,
      int warmupRounds) {

    /** Absent maps and lists (results read from JSON that predates them) are empty. */
    public Result {
      collectivesPerDecodeStep =
          collectivesPerDecodeStep == null ? java.util.Map.of() : collectivesPerDecodeStep;
      profileMs = profileMs == null ? java.util.Map.of() : profileMs;
      verify = verify == null ? List.of() : List.copyOf(verify);
    }

    /** A result without the count of warm-up rounds. */
    public Result(
        int batchSize,
        int inputLen,
        int outputLen,
        double prefillMs,
        double prefillTokensPerS,
        double decodeMedianMs,
        double decodeTokensPerS,
        java.util.Map<String, Long> collectivesPerDecodeStep,
        java.util.Map<String, java.util.Map<String, Double>> profileMs,
        double totalLatencyMs,
        double totalOutputTokensPerS,
        double totalTokensPerS,
        List<VerifyCost> verify) {
      this(
          batchSize,
          inputLen,
          outputLen,
          prefillMs,
          prefillTokensPerS,
          decodeMedianMs,
          decodeTokensPerS,
          collectivesPerDecodeStep,
          profileMs,
          totalLatencyMs,
          totalOutputTokensPerS,
          totalTokensPerS,
          verify,
          0);
    }

    /** A result without verify passes. */
    public Result(
        int batchSize,
        int inputLen,
        int outputLen,
        double prefillMs,
        double prefillTokensPerS,
        double decodeMedianMs,
        double decodeTokensPerS,
        java.util.Map<String, Long> collectivesPerDecodeStep,
        java.util.Map<String, java.util.Map<String, Double>> profileMs,
        double totalLatencyMs,
        double totalOutputTokensPerS,
        double totalTokensPerS) {
      this(
          batchSize,
          inputLen,
          outputLen,
          prefillMs,
          prefillTokensPerS,
          decodeMedianMs,
          decodeTokensPerS,
          collectivesPerDecodeStep,
          profileMs,
          totalLatencyMs,
          totalOutputTokensPerS,
          totalTokensPerS,
          List.of());
    }

    /** A result without the end-to-end figures (0). */
    public Result(
        int batchSize,
        int inputLen,
        int outputLen,
        double prefillMs,
        double prefillTokensPerS,
        double decodeMedianMs,
        double decodeTokensPerS,
        java.util.Map<String, Long> collectivesPerDecodeStep,
        java.util.Map<String, java.util.Map<String, Double>> profileMs) {
      this(
          batchSize,
          inputLen,
          outputLen,
          prefillMs,
          prefillTokensPerS,
          decodeMedianMs,
          decodeTokensPerS,
          collectivesPerDecodeStep,
          profileMs,
          0,
          0,
          0);
    }

    /** A result without a profile. */
    public Result(
        int batchSize,
        int inputLen,
        int outputLen,
        double prefillMs,
        double prefillTokensPerS,
        double decodeMedianMs,
        double decodeTokensPerS,
        java.util.Map<String, Long> collectivesPerDecodeStep) {
      this(
          batchSize,
          inputLen,
          outputLen,
          prefillMs,
          prefillTokensPerS,
          decodeMedianMs,
          decodeTokensPerS,
          collectivesPerDecodeStep,
          java.util.Map.of());
    }
  }

  /** Runs every batch size after the {@link Warmup#DEFAULT} warm-up; see the other overload. */
  public static List<Result> run(
      LanguageModel model,
      List<Integer> batchSizes,
      int inputLen,
      int outputLen,
      long seed,
      PrintStream log) {
    return run(model, batchSizes, inputLen, outputLen, seed, Warmup.DEFAULT, log);
  }

  /** Runs every batch size, each after {@code warmup}; progress lines go to {@code log}. */
  public static List<Result> run(
      LanguageModel model,
      List<Integer> batchSizes,
      int inputLen,
      int outputLen,
      long seed,
      Warmup warmup,
      PrintStream log) {
    return run(model, batchSizes, inputLen, outputLen, seed, warmup, List.of(), log);
  }

  /**
   * Runs every batch size, each after {@code warmup}, and after its decode steps a {@link
   * VerifyCost} for each of {@code draftTokens} (none when empty); progress lines go to {@code
   * log}.
   */
  public static List<Result> run(
      LanguageModel model,
      List<Integer> batchSizes,
      int inputLen,
      int outputLen,
      long seed,
      Warmup warmup,
      List<Integer> draftTokens,
      PrintStream log) {
    return run(model, batchSizes, inputLen, outputLen, seed, warmup, draftTokens, false, log);
  }

  /**
   * {@link #run(LanguageModel, List, int, int, long, Warmup, List, PrintStream)}; with {@code
   * sharedPrefix} every sequence of a batch has the same prompt, prefilled once and its KV pages
   * shared by all ({@link SharedPrefix}: the timed prefill is that one sequence's, and warm-up
   * rounds prefill prompts of one KV page), so that long contexts at large batch sizes can be
   * timed.
   *
   * @throws IllegalArgumentException with {@code sharedPrefix} where {@code inputLen} is not whole
   *     KV pages or draft lengths are given
   */
  public static List<Result> run(
      LanguageModel model,
      List<Integer> batchSizes,
      int inputLen,
      int outputLen,
      long seed,
      Warmup warmup,
      List<Integer> draftTokens,
      boolean sharedPrefix,
      PrintStream log) {
    if (sharedPrefix) {
      SharedPrefix.check(model, inputLen);
      if (!draftTokens.isEmpty()) {
        throw new IllegalArgumentException(
            "--shared-prefix does not time verify passes: drop --speculative-num-draft-tokens");
      }
    }
    int vocab = model.config().vocabSize();
    int mostDrafts = 0;
    for (int k : draftTokens) {
      if (k < 1) {
        throw new IllegalArgumentException(
            "--speculative-num-draft-tokens must be at least 1, got " + k);
      }
      mostDrafts = Math.max(mostDrafts, k);
    }
    if (model instanceof StepProfileReporting p) {
      p.takeStepProfiles(); // drop what loading profiled (the memory planner's prefill)
    }
    if (inputLen < 1 || outputLen < 1) {
      throw new IllegalArgumentException("--input-len and --output-len must be at least 1");
    }
    if (inputLen + outputLen > model.config().maxPositionEmbeddings()) {
      throw new IllegalArgumentException(
          "input-len + output-len ("
              + (inputLen + outputLen)
              + ") exceeds the model's context ("
              + model.config().maxPositionEmbeddings()
              + ")");
    }
    if (mostDrafts > 0
        && inputLen + outputLen + mostDrafts + 1 > model.config().maxPositionEmbeddings()) {
      throw new IllegalArgumentException(
          "a verify pass of "
              + mostDrafts
              + " draft tokens after input-len + output-len ("
              + (inputLen + outputLen)
              + ") tokens exceeds the model's context ("
              + model.config().maxPositionEmbeddings()
              + "): lower --input-len or --output-len");
    }
    log.println(warmup.describe());
    List<Result> results = new ArrayList<>();
    SplittableRandom random = new SplittableRandom(seed);
    for (int b : batchSizes) {
      int promptRows = sharedPrefix ? 1 : b;
      Prompts prompts = Prompts.of(promptRows, inputLen, (s, i) -> random.nextInt(vocab));
      KvCache[] caches = newCaches(model, b);
      int warmLen = sharedPrefix ? SharedPrefix.pageSize(model, inputLen) : inputLen;
      Prompts warm = sharedPrefix ? Prompts.of(b, warmLen, (s, i) -> (s + 7 * i) % vocab) : prompts;
      int warmRounds =
          warmUp(model, warm.tokens(), warm.layout(), warm.lastRows(), warmLen, warmup);
      if (warmup.untilJitSettles()) {
        log.printf("batch %d: %d warm-up rounds%n", b, warmRounds);
      }
      if (model instanceof StepProfileReporting p) {
        p.takeStepProfiles(); // the profile of a batch size is that of its timed steps
      }
      long t0 = System.nanoTime();
      int[] next =
          sharedPrefix
              ? SharedPrefix.prefill(model, caches, prompts.tokens(), random)
              : model.forwardGreedy(prompts.tokens(), prompts.layout(), caches, prompts.lastRows());
      double prefillMs = (System.nanoTime() - t0) / 1e6;
      int[] seqStarts = new int[b + 1];
      int[] rows = new int[b];
      for (int s = 0; s < b; s++) {
        seqStarts[s + 1] = s + 1;
        rows[s] = s;
      }
      double[] steps = new double[outputLen];
      java.util.Map<String, Long> collectives = java.util.Map.of();
      for (int step = 0; step < outputLen; step++) {
        int[] pos = new int[b];
        Arrays.fill(pos, inputLen + step);
        BatchLayout layout = new BatchLayout(seqStarts, pos);
        long s0 = System.nanoTime();
        int[] chosen;
        // The last step is counted: the first may also run one-off work (a profiled eager step).
        if (step == outputLen - 1 && model instanceof CollectiveReporting par) {
          int[][] holder = new int[1][];
          int[] in = next;
          collectives =
              par.collectivesDuring(
                  () -> holder[0] = model.forwardGreedy(in, layout, caches, rows));
          chosen = holder[0];
        } else {
          chosen = model.forwardGreedy(next, layout, caches, rows);
        }
        steps[step] = (System.nanoTime() - s0) / 1e6;
        next = chosen;
      }
      double[] sorted = steps.clone();
      Arrays.sort(sorted);
      double median = sorted[sorted.length / 2];
      double[] randomMs = new double[draftTokens.size()];
      for (int i = 0; i < randomMs.length; i++) {
        randomMs[i] = timeVerify(model, caches, next, draftTokens.get(i), outputLen, random);
      }
      for (KvCache c : caches) {
        c.close();
      }
      List<VerifyCost> verify = new ArrayList<>();
      if (!draftTokens.isEmpty()) {
        double[] repeat = timeRepeating(model, b, inputLen, draftTokens, outputLen, random);
        for (int i = 0; i < randomMs.length; i++) {
          VerifyCost v =
              new VerifyCost(
                  draftTokens.get(i),
                  randomMs[i],
                  randomMs[i] / median,
                  repeat[i + 1],
                  repeat[i + 1] / repeat[0]);
          verify.add(v);
          log.printf(
              "batch %d: verify of %d draft tokens %.2f ms (%.2f decode steps); over a repeating"
                  + " text %.2f ms (%.2f decode steps)%n",
              b,
              v.draftTokens(),
              v.medianMs(),
              v.decodeSteps(),
              v.repeatMedianMs(),
              v.repeatDecodeSteps());
        }
      }
      double totalMs = totalLatencyMs(prefillMs, steps);
      Result r =
          new Result(
              b,
              inputLen,
              outputLen,
              prefillMs,
              promptRows * inputLen * 1000.0 / prefillMs,
              median,
              b * 1000.0 / median,
              collectives,
              model instanceof StepProfileReporting p ? p.takeStepProfiles() : java.util.Map.of(),
              totalMs,
              (double) b * outputLen * 1000.0 / totalMs,
              (double) b * (inputLen + outputLen) * 1000.0 / totalMs,
              verify,
              warmRounds);
      if (!collectives.isEmpty()) {
        log.printf("batch %d: collectives per decode step %s%n", b, collectives);
      }
      log.printf(
          "batch %d: prefill %.1f ms (%.0f tok/s), decode %.2f ms/step (%.1f tok/s),"
              + " total %.1f ms (%.1f output tok/s)%n",
          b,
          r.prefillMs(),
          r.prefillTokensPerS(),
          r.decodeMedianMs(),
          r.decodeTokensPerS(),
          r.totalLatencyMs(),
          r.totalOutputTokensPerS());
      results.add(r);
    }
    return results;
  }

  /** Untimed verify passes of a shape before the timed ones (graph buckets, GEMM picks, JIT). */
  private static final int VERIFY_WARMUP_PASSES = 3;

  /**
   * Median of {@code passes} verify passes of {@code k} drafts per sequence over the caches as
   * decoding left them (each sequence's next token, then {@code k} random tokens), each rolled
   * back, after {@link #VERIFY_WARMUP_PASSES} untimed ones.
   */
  static double timeVerify(
      LanguageModel model,
      KvCache[] caches,
      int[] next,
      int k,
      int passes,
      SplittableRandom random) {
    int vocab = model.config().vocabSize();
    int[] tokens = new int[caches.length * (k + 1)];
    for (int s = 0; s < caches.length; s++) {
      for (int j = 0; j <= k; j++) {
        tokens[s * (k + 1) + j] = j == 0 ? next[s] : random.nextInt(vocab);
      }
    }
    return medianPassMs(model, caches, tokens, k + 1, passes, false);
  }

  /**
   * Decode steps and verify passes over a repeating text, the case of n-gram drafts on a text that
   * repeats itself: each sequence's prompt is one token repeated {@code inputLen} times, and its
   * decode row and every verify row are that token again. All positions then carry the same hidden
   * state (attention over equal values returns that value, layer after layer), so every row of a
   * sequence routes to the same experts and a pass costs what its extra rows cost, not the extra
   * experts that distinct tokens bring in. Returns the median decode step, then the median pass per
   * entry of {@code draftTokens}; each pass rolled back, after untimed ones. A model that profiles
   * ({@link StepProfileReporting}, {@code --profile}) profiles the first of these passes of each
   * length, under a name ending in "repeating text".
   */
  static double[] timeRepeating(
      LanguageModel model,
      int b,
      int inputLen,
      List<Integer> draftTokens,
      int passes,
      SplittableRandom random) {
    int vocab = model.config().vocabSize();
    int[] token = new int[b];
    for (int s = 0; s < b; s++) {
      token[s] = random.nextInt(vocab);
    }
    Prompts prompt = Prompts.of(b, inputLen, (s, i) -> token[s]);
    KvCache[] caches = newCaches(model, b);
    StepProfileReporting profiled = model instanceof StepProfileReporting p ? p : null;
    try {
      model.forwardGreedy(prompt.tokens(), prompt.layout(), caches, prompt.lastRows());
      double[] out = new double[draftTokens.size() + 1];
      out[0] = medianPassMs(model, caches, token, 1, passes, true);
      if (profiled != null) {
        profiled.profileVerifyPasses("repeating text");
      }
      for (int i = 0; i < draftTokens.size(); i++) {
        int rowsPerSeq = draftTokens.get(i) + 1;
        int[] tokens = new int[b * rowsPerSeq];
        for (int t = 0; t < tokens.length; t++) {
          tokens[t] = token[t / rowsPerSeq];
        }
        out[i + 1] = medianPassMs(model, caches, tokens, rowsPerSeq, passes, false);
      }
      return out;
    } finally {
      if (profiled != null) {
        profiled.profileVerifyPasses(null);
      }
      closeAll(caches);
    }
  }

  /**
   * Median latency of {@code passes} steps that extend every sequence by {@code rowsPerSeq} of
   * {@code tokens} over its cache, each rolled back, after {@link #VERIFY_WARMUP_PASSES} untimed
   * ones: the greedy token of the last row per sequence when {@code greedy} (a decode step), else
   * of every row (a verify pass of greedy drafts, as the batch engine runs it).
   */
  private static double medianPassMs(
      LanguageModel model,
      KvCache[] caches,
      int[] tokens,
      int rowsPerSeq,
      int passes,
      boolean greedy) {
    int b = caches.length;
    int[] positions = new int[b * rowsPerSeq];
    int[] starts = new int[b + 1];
    int[] lengths = new int[b];
    for (int s = 0; s < b; s++) {
      lengths[s] = caches[s].length();
      starts[s + 1] = (s + 1) * rowsPerSeq;
      for (int j = 0; j < rowsPerSeq; j++) {
        positions[s * rowsPerSeq + j] = lengths[s] + j;
      }
    }
    int[] rows = new int[greedy ? b : b * rowsPerSeq];
    for (int r = 0; r < rows.length; r++) {
      rows[r] = greedy ? (r + 1) * rowsPerSeq - 1 : r;
    }
    BatchLayout layout = new BatchLayout(starts, positions);
    double[] ms = new double[passes];
    for (int pass = -VERIFY_WARMUP_PASSES; pass < passes; pass++) {
      long t0 = System.nanoTime();
      model.forwardGreedy(tokens, layout, caches, rows);
      double took = (System.nanoTime() - t0) / 1e6;
      if (pass >= 0) {
        ms[pass] = took;
      }
      for (int s = 0; s < b; s++) {
        caches[s].setLength(lengths[s]); // the drafts are rejected: the cache is as before
      }
    }
    Arrays.sort(ms);
    return ms[ms.length / 2];
  }

  /**
   * The prefill plus the first {@code steps.length - 1} decode steps: a request of {@code
   * outputLen} tokens gets its first token from the prefill, so it runs one decode step fewer than
   * the benchmark times (sglang.bench_one_batch's "Total" counts the same steps).
   */
  static double totalLatencyMs(double prefillMs, double[] steps) {
    double total = prefillMs;
    for (int i = 0; i < steps.length - 1; i++) {
      total += steps[i];
    }
    return total;
  }

  /**
   * {@code b} prompts of {@code inputLen} tokens each ({@code token} of sequence and position,
   * asked in that order), laid out one after another, with each prompt's last row.
   */
  private record Prompts(int[] tokens, BatchLayout layout, int[] lastRows) {
    static Prompts of(int b, int inputLen, java.util.function.IntBinaryOperator token) {
      int[] tokens = new int[b * inputLen];
      int[] positions = new int[b * inputLen];
      int[] starts = new int[b + 1];
      int[] lastRows = new int[b];
      for (int s = 0; s < b; s++) {
        for (int i = 0; i < inputLen; i++) {
          tokens[s * inputLen + i] = token.applyAsInt(s, i);
          positions[s * inputLen + i] = i;
        }
        starts[s + 1] = (s + 1) * inputLen;
        lastRows[s] = (s + 1) * inputLen - 1;
      }
      return new Prompts(tokens, new BatchLayout(starts, positions), lastRows);
    }
  }

  /**
   * Runs {@code warmup} on the batch's prompts into caches that are dropped afterwards; returns the
   * rounds run.
   */
  private static int warmUp(
      LanguageModel model,
      int[] tokens,
      BatchLayout prompts,
      int[] lastRows,
      int inputLen,
      Warmup warmup) {
    int b = lastRows.length;
    int[] starts = new int[b + 1];
    int[] rows = new int[b];
    for (int s = 0; s < b; s++) {
      starts[s + 1] = s + 1;
      rows[s] = s;
    }
    // A round's decode steps that would pass the context restart from a new prefill.
    int room = model.config().maxPositionEmbeddings() - inputLen;
    JitSettling jit = new JitSettling();
    for (int round = 0; ; round++) {
      if (round >= warmup.rounds()
          && (!warmup.untilJitSettles() || round >= Warmup.MAX_ROUNDS || jit.settled())) {
        return round;
      }
      jit.startRound();
      KvCache[] caches = null;
      try {
        int[] next = null;
        for (int step = 0; step < Math.max(1, warmup.decodeSteps()); step++) {
          if (step % room == 0) {
            closeAll(caches);
            caches = newCaches(model, b);
            next = model.forwardGreedy(tokens, prompts, caches, lastRows);
          }
          if (step < warmup.decodeSteps()) {
            int[] pos = new int[b];
            Arrays.fill(pos, inputLen + step % room);
            next = model.forwardGreedy(next, new BatchLayout(starts, pos), caches, rows);
          }
        }
      } finally {
        closeAll(caches);
      }
      jit.endRound();
    }
  }

  private static void closeAll(KvCache[] caches) {
    if (caches != null) {
      for (KvCache c : caches) {
        c.close();
      }
    }
  }

  private static KvCache[] newCaches(LanguageModel model, int n) {
    KvCache[] caches = new KvCache[n];
    for (int s = 0; s < n; s++) {
      caches[s] = model.newCache();
    }
    return caches;
  }
}
