package dev.ringmaster.engine;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Forward steps run at load on scratch caches, so the JIT has compiled the CPU kernels before the
 * first request. The Vector API only becomes SIMD code once C2 compiles it: the first 128-token
 * prefill of a fresh JVM took 1-4 s on the embedded model against about 60 ms warm, and decode
 * steps need tens of steps more. {@link #PREFILL_ROUNDS} prefills of {@link #PREFILL_TOKENS} tokens
 * (after one, C2 is still compiling the prefill's loops: a first 182-token prompt then took 146-225
 * ms, after four 47-83) and a number of decode steps, the shapes of a first request, bring the
 * first request near the steady state (docs/cpu-performance.md has the figures).
 *
 * <p>Batched steps take other code paths (many-row products, the parallel split of work across
 * rows), so a server warmed by one sequence alone still met its first burst of concurrent requests
 * cold: 32 concurrent 128-token requests on a fresh server ran at half the output throughput of the
 * next 32 and their TTFT p99 was 4.0-4.9 s against 0.4-0.5 s. The warm-up therefore also runs a
 * batch: {@code batchRows} prompts of {@link #BATCH_PROMPT_TOKENS} tokens prefilled in one step,
 * then as many decode steps of all of them.
 *
 * <p>After those fixed rounds the compiler threads are often still busy (on two cores a cold {@code
 * generate} of a 146-token prompt then prefilled in 27-475 ms while C2 was still compiling the
 * attention and deoptimising the matmul planner on new prompt lengths), so settle rounds follow
 * until the JIT is idle ({@link JitSettling}) or a time limit passes: prefills of varying lengths,
 * each with {@link #SETTLE_DECODE_STEPS} decode steps, alternating with the batch where there is
 * one. The caches are dropped afterwards; nothing the model returns later depends on the warm-up
 * (the kernels' results do not depend on JIT state).
 */
public final class EngineWarmup {
  /** Decode steps after the warm-up prefill unless a flag says otherwise. */
  public static final int DEFAULT_DECODE_STEPS = 64;

  /**
   * Rows of the batched warm-up unless a flag says otherwise: the CPU's default running batch, so a
   * burst up to the default {@code --max-running-requests} finds its shapes compiled.
   */
  public static final int DEFAULT_BATCH_ROWS = 32;

  /** Tokens of the warm-up prefill (fewer when the model's context is shorter). */
  public static final int PREFILL_TOKENS = 128;

  /** One-sequence warm-up prefills, each on a fresh scratch cache, before its decode steps. */
  public static final int PREFILL_ROUNDS = 4;

  /** Prompt tokens of each row of the batched warm-up (fewer when the context is shorter). */
  public static final int BATCH_PROMPT_TOKENS = 32;

  /** Decode steps of each settle round. */
  public static final int SETTLE_DECODE_STEPS = 8;

  /**
   * Calls of the host sampler on synthetic logits after the one-sequence prefills: its vector loops
   * are not in the forward steps, and a cold sampler ran the first 100 tokens of a default {@code
   * generate} (temperature 0.8, top-p 0.95) at 710 tok/s against 1,085 over 400 tokens.
   */
  public static final int SAMPLER_CALLS = 64;

  /** Verify-shaped passes after the one-sequence decode steps, with speculative decoding. */
  public static final int VERIFY_PASSES = 32;

  /** Calls of the host sampler in each settle round. */
  public static final int SETTLE_SAMPLER_CALLS = 8;

  /** Seconds of settle rounds at most unless a flag says otherwise. */
  public static final int DEFAULT_SETTLE_SECONDS = 10;

  /** Prefill lengths of the settle rounds in turn, in quarters of {@link #PREFILL_TOKENS}. */
  private static final int[] SETTLE_QUARTERS = {5, 3, 6, 2, 7, 4};

  private EngineWarmup() {}

  /** {@link #run(LanguageModel, int, int)} of one sequence only, without the batched phase. */
  public static Summary run(LanguageModel model, int decodeSteps) {
    return run(model, decodeSteps, 1, 0);
  }

  /** {@link #run(LanguageModel, int, int, int)} without settle rounds. */
  public static Summary run(LanguageModel model, int decodeSteps, int batchRows) {
    return run(model, decodeSteps, batchRows, 0);
  }

  /** {@link #run(LanguageModel, int, int, int, int)} without verify passes. */
  public static Summary run(
      LanguageModel model, int decodeSteps, int batchRows, int settleSeconds) {
    return run(model, decodeSteps, batchRows, settleSeconds, 0);
  }

  /**
   * Runs {@link #PREFILL_ROUNDS} prefills of one sequence, each on a new cache of {@code model},
   * the last followed by {@code decodeSteps} greedy decode steps, and {@link #SAMPLER_CALLS} calls
   * of the host sampler on synthetic logits; then, when {@code batchRows} is above 1, one prefill
   * of {@code batchRows} prompts together and {@code decodeSteps} decode steps of all of them.
   * Then, for at most {@code settleSeconds}, settle rounds until the JIT is idle: a prefill of 5/4,
   * 3/4, 3/2, 1/2, 7/4 and 1 times the warm-up prefill's length in turn, {@link
   * #SETTLE_DECODE_STEPS} decode steps and {@link #SETTLE_SAMPLER_CALLS} sampler calls, every other
   * round the batch instead of the prefill where {@code batchRows} is above 1. Every length is
   * clamped to fit the model's context. Frees the caches and returns what ran.
   *
   * <p>With {@code verifyTokens} above 1 (speculative decoding with {@code verifyTokens - 1}
   * drafts), the one-sequence phases also run verify-shaped passes: {@link #VERIFY_PASSES} after
   * the decode steps, {@link #SETTLE_DECODE_STEPS} in each one-sequence settle round, each an
   * extend of the sequence by {@code verifyTokens} tokens with every row's argmax, then a rollback
   * that keeps a varying number of them, as a verify pass accepts some drafts. A first speculative
   * run otherwise compiled its verify paths while it ran.
   *
   * @throws IllegalArgumentException if {@code decodeSteps}, {@code settleSeconds} or {@code
   *     verifyTokens} is negative or {@code batchRows} below 1
   */
  public static Summary run(
      LanguageModel model, int decodeSteps, int batchRows, int settleSeconds, int verifyTokens) {
    if (verifyTokens < 0) {
      throw new IllegalArgumentException(
          "warm-up verify tokens must not be negative, got " + verifyTokens);
    }
    if (settleSeconds < 0) {
      throw new IllegalArgumentException(
          "warm-up settle seconds must not be negative, got " + settleSeconds);
    }
    if (decodeSteps < 0) {
      throw new IllegalArgumentException(
          "warm-up decode steps must not be negative, got " + decodeSteps);
    }
    if (batchRows < 1) {
      throw new IllegalArgumentException(
          "warm-up batch rows must be at least 1 (1 runs one sequence only), got " + batchRows);
    }
    int context = model.config().maxPositionEmbeddings();
    int prefill = Math.max(1, Math.min(PREFILL_TOKENS, context / 2));
    int steps = Math.min(decodeSteps, context - prefill);
    long t0 = System.nanoTime();
    int verify = verifyTokens > 1 ? verifyTokens : 0;
    for (int round = 1; round < PREFILL_ROUNDS; round++) {
      runBatch(model, 1, prefill, 0, 0, 0);
    }
    int verifyRan = runBatch(model, 1, prefill, steps, verify, VERIFY_PASSES);
    SamplerRows sampler = new SamplerRows(model.config().vocabSize());
    sampler.sample(SAMPLER_CALLS);
    int rowPrompt = Math.max(1, Math.min(BATCH_PROMPT_TOKENS, context / 2));
    int batchSteps = batchRows > 1 ? Math.min(decodeSteps, context - rowPrompt) : 0;
    if (batchRows > 1) {
      runBatch(model, batchRows, rowPrompt, batchSteps, 0, 0);
    }
    long settleStart = System.nanoTime();
    long settleEnd = settleStart + settleSeconds * 1_000_000_000L;
    JitSettling jit = new JitSettling();
    int settleRounds = 0;
    while (settleSeconds > 0 && !jit.settled() && System.nanoTime() < settleEnd) {
      jit.startRound();
      if (batchRows > 1 && settleRounds % 2 == 1) {
        runBatch(model, batchRows, rowPrompt, Math.min(SETTLE_DECODE_STEPS, batchSteps), 0, 0);
      } else {
        int prefillRound = batchRows > 1 ? settleRounds / 2 : settleRounds;
        int quarters = SETTLE_QUARTERS[prefillRound % SETTLE_QUARTERS.length];
        int length = Math.max(1, Math.min(PREFILL_TOKENS * quarters / 4, context / 2));
        verifyRan +=
            runBatch(
                model,
                1,
                length,
                Math.min(SETTLE_DECODE_STEPS, context - length),
                verify,
                SETTLE_DECODE_STEPS);
      }
      sampler.sample(SETTLE_SAMPLER_CALLS);
      jit.endRound();
      settleRounds++;
    }
    boolean settled = settleRounds > 0 && jit.settled();
    long now = System.nanoTime();
    return new Summary(
        prefill,
        steps,
        batchRows > 1 ? batchRows : 0,
        batchSteps,
        settleRounds,
        settled,
        verify,
        verifyRan,
        (now - settleStart) / 1e6,
        (now - t0) / 1e6);
  }

  /**
   * The host sampler's paths (top-p, top-k, min-p with penalties, logprobs) as rows of one batch,
   * over fixed random logits of the model's vocabulary.
   */
  private static final class SamplerRows {
    private final SamplingBatch batch = new SamplingBatch();
    private final float[] logits;
    private final int vocab;
    private long step;

    SamplerRows(int vocab) {
      this.vocab = vocab;
      SplittableRandom random = new SplittableRandom(7);
      logits = new float[4 * vocab];
      for (int i = 0; i < logits.length; i++) {
        // A spread like a trained model's: a few tokens far above a long tail.
        logits[i] = (float) (3 * random.nextDouble() * random.nextDouble() * random.nextDouble());
      }
    }

    void sample(int calls) {
      for (int c = 0; c < calls; c++, step++) {
        batch.clear();
        batch.addRow(0.8f, 0, 0.95f, 0f, 1, step, 1f, 0f, 0f, -1);
        batch.addRow(1f, 50, 1f, 0f, 2, step, 1f, 0f, 0f, -1);
        batch.addRow(0.7f, 0, 1f, 0.05f, 3, step, 1.1f, 0.1f, 0.1f, -1);
        batch.addSeenToken((int) (step % vocab), 1);
        batch.addRow(1f, 0, 1f, 0f, 4, step, 1f, 0f, 0f, 5);
        batch.sampleOnCpu(logits, vocab);
      }
    }
  }

  /**
   * One prefill of {@code rows} prompts of {@code prompt} tokens, then {@code steps} decodes, then
   * (one row only, {@code verifyTokens} above 0) {@code verifyPasses} verify-shaped extends.
   */
  private static int runBatch(
      LanguageModel model, int rows, int prompt, int steps, int verifyTokens, int verifyPasses) {
    int vocab = model.config().vocabSize();
    int[] ids = new int[rows * prompt];
    int[] positions = new int[rows * prompt];
    int[] seqStart = new int[rows + 1];
    int[] last = new int[rows];
    for (int r = 0; r < rows; r++) {
      seqStart[r + 1] = (r + 1) * prompt;
      last[r] = seqStart[r + 1] - 1;
      for (int j = 0; j < prompt; j++) {
        // Distinct prompts per row, so no row repeats another's attention pattern.
        ids[r * prompt + j] = (1 + j * 13 + r * 7) % vocab;
        positions[r * prompt + j] = j;
      }
    }
    KvCache[] caches = new KvCache[rows];
    try {
      for (int r = 0; r < rows; r++) {
        caches[r] = model.newCache();
      }
      int[] next = model.forwardGreedy(ids, new BatchLayout(seqStart, positions), caches, last);
      int[] decodeStart = new int[rows + 1];
      int[] rowIndex = new int[rows];
      for (int r = 0; r < rows; r++) {
        decodeStart[r + 1] = r + 1;
        rowIndex[r] = r;
      }
      int[] pos = new int[rows];
      for (int step = 0; step < steps; step++) {
        Arrays.fill(pos, prompt + step);
        next = model.forwardGreedy(next, new BatchLayout(decodeStart, pos), caches, rowIndex);
      }
      if (rows == 1 && verifyTokens > 0) {
        return verifyPasses(model, caches[0], next[0], verifyTokens, verifyPasses);
      }
      return 0;
    } finally {
      for (KvCache c : caches) {
        if (c != null) {
          c.close();
        }
      }
    }
  }

  /**
   * {@code passes} extends of {@code cache} by {@code tokens} tokens (the last token, then drafts)
   * with every row's argmax, each rolled back to keep 1 to {@code tokens} of them in turn, while
   * the model's context has room.
   */
  private static int verifyPasses(
      LanguageModel model, KvCache cache, int last, int tokens, int passes) {
    int vocab = model.config().vocabSize();
    int context = model.config().maxPositionEmbeddings();
    int[] ids = new int[tokens];
    int[] rows = new int[tokens];
    for (int i = 0; i < tokens; i++) {
      rows[i] = i;
    }
    int pass = 0;
    for (; pass < passes && cache.length() + tokens <= context; pass++) {
      int start = cache.length();
      ids[0] = last;
      for (int i = 1; i < tokens; i++) {
        ids[i] = (last + i * 31 + pass) % vocab;
      }
      int[] argmax =
          model.forwardGreedy(ids, BatchLayout.single(tokens, start), new KvCache[] {cache}, rows);
      int kept = 1 + pass % tokens;
      cache.setLength(start + kept);
      last = argmax[kept - 1];
    }
    return pass;
  }

  /**
   * What a warm-up ran.
   *
   * @param prefillTokens tokens of each of its {@link #PREFILL_ROUNDS} one-sequence prefills
   * @param decodeSteps decode steps after it
   * @param batchRows rows of its batched phase (0 when it ran none)
   * @param batchDecodeSteps decode steps of the batched phase
   * @param settleRounds settle rounds after the fixed ones
   * @param settled whether the JIT was idle when the settle rounds stopped
   * @param verifyTokens tokens of each verify-shaped pass (0 when it ran none)
   * @param verifyPasses verify-shaped passes it ran
   * @param settleMs wall time of the settle rounds in milliseconds
   * @param ms wall time in milliseconds
   */
  public record Summary(
      int prefillTokens,
      int decodeSteps,
      int batchRows,
      int batchDecodeSteps,
      int settleRounds,
      boolean settled,
      int verifyTokens,
      int verifyPasses,
      double settleMs,
      double ms) {
    /** One line for the log. */
    public String describe() {
      String batch =
          batchRows == 0
              ? ""
              : String.format(
                  ", then %d prompts prefilled together and %d decode steps of all of them",
                  batchRows, batchDecodeSteps);
      String settle =
          settleRounds == 0
              ? ""
              : String.format(
                  ", then %d settle rounds in %.0f ms (%s)",
                  settleRounds,
                  settleMs,
                  settled
                      ? "the JIT is idle"
                      : "stopped at --cpu-warmup-seconds, the JIT still busy");
      String verify =
          verifyPasses == 0
              ? ""
              : String.format(", %d verify passes of %d tokens", verifyPasses, verifyTokens);
      return String.format(
          "warm-up: %d prefills of %d tokens, %d decode steps%s and %d sampler calls on scratch"
              + " caches%s%s, %.0f ms (--cpu-warmup-steps 0 skips it)",
          PREFILL_ROUNDS, prefillTokens, decodeSteps, verify, SAMPLER_CALLS, batch, settle, ms);
    }
  }
}
