package dev.ringmaster.engine;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;

/**
 * Forward steps run at load on a scratch cache, so the JIT has compiled the CPU kernels before the
 * first request. The Vector API only becomes SIMD code once C2 compiles it: the first 128-token
 * prefill of a fresh JVM took 1-4 s on the embedded model against about 60 ms warm, and decode
 * steps need tens of steps more. One prefill of {@link #PREFILL_TOKENS} tokens and a number of
 * decode steps, the shapes of a first request, take the first request to within noise of the steady
 * state (docs/cpu-performance.md has the figures). The cache is dropped afterwards; nothing the
 * model returns later depends on the warm-up (the kernels' results do not depend on JIT state).
 */
public final class EngineWarmup {
  /** Decode steps after the warm-up prefill unless a flag says otherwise. */
  public static final int DEFAULT_DECODE_STEPS = 64;

  /** Tokens of the warm-up prefill (fewer when the model's context is shorter). */
  public static final int PREFILL_TOKENS = 128;

  private EngineWarmup() {}

  /**
   * Runs one prefill and {@code decodeSteps} greedy decode steps of one sequence on a new cache of
   * {@code model}, both clamped to fit its context, and frees the cache. Returns what ran.
   *
   * @throws IllegalArgumentException if {@code decodeSteps} is negative
   */
  public static Summary run(LanguageModel model, int decodeSteps) {
    if (decodeSteps < 0) {
      throw new IllegalArgumentException(
          "warm-up decode steps must not be negative, got " + decodeSteps);
    }
    int context = model.config().maxPositionEmbeddings();
    int prefill = Math.max(1, Math.min(PREFILL_TOKENS, context / 2));
    int steps = Math.min(decodeSteps, context - prefill);
    int vocab = model.config().vocabSize();
    int[] ids = new int[prefill];
    int[] positions = new int[prefill];
    for (int j = 0; j < prefill; j++) {
      ids[j] = (1 + j * 13) % vocab;
      positions[j] = j;
    }
    long t0 = System.nanoTime();
    KvCache cache = model.newCache();
    try {
      KvCache[] caches = {cache};
      int[] next =
          model.forwardGreedy(
              ids,
              new BatchLayout(new int[] {0, prefill}, positions),
              caches,
              new int[] {prefill - 1});
      for (int step = 0; step < steps; step++) {
        int[] pos = {prefill + step};
        next =
            model.forwardGreedy(
                next, new BatchLayout(new int[] {0, 1}, pos), caches, new int[] {0});
      }
    } finally {
      cache.close();
    }
    return new Summary(prefill, steps, (System.nanoTime() - t0) / 1e6);
  }

  /**
   * What a warm-up ran.
   *
   * @param prefillTokens tokens of its prefill
   * @param decodeSteps decode steps after it
   * @param ms wall time in milliseconds
   */
  public record Summary(int prefillTokens, int decodeSteps, double ms) {
    /** One line for the log. */
    public String describe() {
      return String.format(
          "warm-up: a %d-token prefill and %d decode steps on a scratch cache, %.0f ms"
              + " (--cpu-warmup-steps 0 skips it)",
          prefillTokens, decodeSteps, ms);
    }
  }
}
