package dev.ringmaster.engine;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.util.Arrays;

/**
 * Forward steps run at load on scratch caches, so the JIT has compiled the CPU kernels before the
 * first request. The Vector API only becomes SIMD code once C2 compiles it: the first 128-token
 * prefill of a fresh JVM took 1-4 s on the embedded model against about 60 ms warm, and decode
 * steps need tens of steps more. One prefill of {@link #PREFILL_TOKENS} tokens and a number of
 * decode steps, the shapes of a first request, take the first request to within noise of the steady
 * state (docs/cpu-performance.md has the figures).
 *
 * <p>Batched steps take other code paths (many-row products, the parallel split of work across
 * rows), so a server warmed by one sequence alone still met its first burst of concurrent requests
 * cold: 32 concurrent 128-token requests on a fresh server ran at half the output throughput of the
 * next 32 and their TTFT p99 was 4.0-4.9 s against 0.4-0.5 s. The warm-up therefore also runs a
 * batch: {@code batchRows} prompts of {@link #BATCH_PROMPT_TOKENS} tokens prefilled in one step,
 * then as many decode steps of all of them. The caches are dropped afterwards; nothing the model
 * returns later depends on the warm-up (the kernels' results do not depend on JIT state).
 *
 * <p>Speculative decoding's verify passes (a few tokens of one sequence, logits for each) take
 * other code paths again: multi-token matmul tiles with a one-token remainder, every row through
 * the LM head, and attention loops whose cost models have only seen decode and prefill calls. A
 * speculative {@code generate} of 200 tokens runs about 50-100 such passes, all of them cold when
 * the warm-up ran only decode steps; so with {@code verifyTokens} above 1 the one sequence also
 * runs as many verify-shaped extends, each rolled back to one accepted token.
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

  /** Prompt tokens of each row of the batched warm-up (fewer when the context is shorter). */
  public static final int BATCH_PROMPT_TOKENS = 32;

  private EngineWarmup() {}

  /** {@link #run(LanguageModel, int, int)} of one sequence only, without the batched phase. */
  public static Summary run(LanguageModel model, int decodeSteps) {
    return run(model, decodeSteps, 1);
  }

  /** {@link #run(LanguageModel, int, int, int)} without verify-shaped steps. */
  public static Summary run(LanguageModel model, int decodeSteps, int batchRows) {
    return run(model, decodeSteps, batchRows, 1);
  }

  /**
   * Runs one prefill and {@code decodeSteps} greedy decode steps of one sequence on a new cache of
   * {@code model}, and, when {@code verifyTokens} is above 1, as many extends of that sequence by
   * {@code verifyTokens} tokens with logits for each (a speculative verify pass), each rolled back
   * to one kept token; then, when {@code batchRows} is above 1, one prefill of {@code batchRows}
   * prompts together and {@code decodeSteps} decode steps of all of them; every length clamped to
   * fit the model's context. Frees the caches and returns what ran.
   *
   * @param verifyTokens tokens of each verify-shaped step (the draft tokens plus one); 1 runs none
   * @throws IllegalArgumentException if {@code decodeSteps} is negative or {@code batchRows} or
   *     {@code verifyTokens} below 1
   */
  public static Summary run(LanguageModel model, int decodeSteps, int batchRows, int verifyTokens) {
    if (decodeSteps < 0) {
      throw new IllegalArgumentException(
          "warm-up decode steps must not be negative, got " + decodeSteps);
    }
    if (batchRows < 1) {
      throw new IllegalArgumentException(
          "warm-up batch rows must be at least 1 (1 runs one sequence only), got " + batchRows);
    }
    if (verifyTokens < 1) {
      throw new IllegalArgumentException(
          "warm-up verify tokens must be at least 1 (1 runs no verify steps), got " + verifyTokens);
    }
    int context = model.config().maxPositionEmbeddings();
    int prefill = Math.max(1, Math.min(PREFILL_TOKENS, context / 2));
    int steps = Math.min(decodeSteps, context - prefill);
    long t0 = System.nanoTime();
    runBatch(model, 1, prefill, steps);
    int verifySteps = 0;
    if (verifyTokens > 1 && prefill + verifyTokens <= context) {
      verifySteps = runVerifySteps(model, prefill, verifyTokens, decodeSteps);
    }
    int rowPrompt = Math.max(1, Math.min(BATCH_PROMPT_TOKENS, context / 2));
    int batchSteps = batchRows > 1 ? Math.min(decodeSteps, context - rowPrompt) : 0;
    if (batchRows > 1) {
      runBatch(model, batchRows, rowPrompt, batchSteps);
    }
    return new Summary(
        prefill,
        steps,
        verifySteps > 0 ? verifyTokens : 0,
        verifySteps,
        batchRows > 1 ? batchRows : 0,
        batchSteps,
        (System.nanoTime() - t0) / 1e6);
  }

  /**
   * {@code steps} extends of a {@code prompt}-token sequence by {@code tokens} tokens with logits
   * for every row, each rolled back to the prompt and one kept token (the cache then grows by one
   * per step, as after a verify pass that accepted nothing), fewer where the context ends first.
   * Returns the steps run.
   */
  private static int runVerifySteps(LanguageModel model, int prompt, int tokens, int steps) {
    int vocab = model.config().vocabSize();
    int context = model.config().maxPositionEmbeddings();
    int[] ids = new int[prompt];
    for (int j = 0; j < prompt; j++) {
      ids[j] = (1 + j * 13) % vocab;
    }
    int[] rows = new int[tokens];
    for (int i = 0; i < tokens; i++) {
      rows[i] = i;
    }
    try (KvCache cache = model.newCache()) {
      KvCache[] caches = {cache};
      model.forward(ids, BatchLayout.single(prompt, 0), caches, new int[] {prompt - 1});
      int[] step = new int[tokens];
      int s = 0;
      for (; s < steps && cache.length() + tokens <= context; s++) {
        int start = cache.length();
        for (int i = 0; i < tokens; i++) {
          step[i] = (3 + (start + i) * 7) % vocab;
        }
        model.forward(step, BatchLayout.single(tokens, start), caches, rows);
        cache.setLength(start + 1);
      }
      return s;
    }
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
   * @param prefillTokens tokens of its one-sequence prefill
   * @param decodeSteps decode steps after it
   * @param verifyTokens tokens of each verify-shaped step after them (0 when it ran none)
   * @param verifySteps verify-shaped steps
   * @param batchRows rows of its batched phase (0 when it ran none)
   * @param batchDecodeSteps decode steps of the batched phase
   * @param ms wall time in milliseconds
   */
  public record Summary(
      int prefillTokens,
      int decodeSteps,
      int verifyTokens,
      int verifySteps,
      int batchRows,
      int batchDecodeSteps,
      double ms) {
    /** One line for the log. */
    public String describe() {
      String batch =
          batchRows == 0
              ? ""
              : String.format(
                  ", then %d prompts prefilled together and %d decode steps of all of them",
                  batchRows, batchDecodeSteps);
      String verify =
          verifySteps == 0
              ? ""
              : String.format(", %d verify steps of %d tokens", verifySteps, verifyTokens);
      return String.format(
          "warm-up: a %d-token prefill and %d decode steps%s on a scratch cache%s, %.0f ms"
              + " (--cpu-warmup-steps 0 skips it)",
          prefillTokens, decodeSteps, verify, batch, ms);
    }
  }
}
