package dev.ringmaster.engine;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.Arrays;

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
 * then as many decode steps of all of them. The caches are dropped afterwards; nothing the model
 * returns later depends on the warm-up (the kernels' results do not depend on JIT state).
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

  private EngineWarmup() {}

  /** {@link #run(LanguageModel, int, int)} of one sequence only, without the batched phase. */
  public static Summary run(LanguageModel model, int decodeSteps) {
    return run(model, decodeSteps, 1);
  }

  /**
   * Runs {@link #PREFILL_ROUNDS} prefills of one sequence, each on a new cache of {@code model},
   * the last followed by {@code decodeSteps} greedy decode steps; then, when {@code batchRows} is
   * above 1, one prefill of {@code batchRows} prompts together and {@code decodeSteps} decode steps
   * of all of them; every length clamped to fit the model's context. Frees the caches and returns
   * what ran.
   *
   * @throws IllegalArgumentException if {@code decodeSteps} is negative or {@code batchRows} below
   *     1
   */
  public static Summary run(LanguageModel model, int decodeSteps, int batchRows) {
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
    for (int round = 1; round < PREFILL_ROUNDS; round++) {
      runBatch(model, 1, prefill, 0);
    }
    runBatch(model, 1, prefill, steps);
    int rowPrompt = Math.max(1, Math.min(BATCH_PROMPT_TOKENS, context / 2));
    int batchSteps = batchRows > 1 ? Math.min(decodeSteps, context - rowPrompt) : 0;
    if (batchRows > 1) {
      runBatch(model, batchRows, rowPrompt, batchSteps);
    }
    return new Summary(
        prefill, steps, batchRows > 1 ? batchRows : 0, batchSteps, (System.nanoTime() - t0) / 1e6);
  }

  /** One prefill of {@code rows} prompts of {@code prompt} tokens, then {@code steps} decodes. */
  private static void runBatch(LanguageModel model, int rows, int prompt, int steps) {
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
    } finally {
      for (KvCache c : caches) {
        if (c != null) {
          c.close();
        }
      }
    }
  }

  /**
   * What a warm-up ran.
   *
   * @param prefillTokens tokens of each of its {@link #PREFILL_ROUNDS} one-sequence prefills
   * @param decodeSteps decode steps after it
   * @param batchRows rows of its batched phase (0 when it ran none)
   * @param batchDecodeSteps decode steps of the batched phase
   * @param ms wall time in milliseconds
   */
  public record Summary(
      int prefillTokens, int decodeSteps, int batchRows, int batchDecodeSteps, double ms) {
    /** One line for the log. */
    public String describe() {
      String batch =
          batchRows == 0
              ? ""
              : String.format(
                  ", then %d prompts prefilled together and %d decode steps of all of them",
                  batchRows, batchDecodeSteps);
      return String.format(
          "warm-up: %d prefills of %d tokens and %d decode steps on scratch caches%s, %.0f ms"
              + " (--cpu-warmup-steps 0 skips it)",
          PREFILL_ROUNDS, prefillTokens, decodeSteps, batch, ms);
    }
  }
}
