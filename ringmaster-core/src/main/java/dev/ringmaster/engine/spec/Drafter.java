package dev.ringmaster.engine.spec;

/**
 * Proposes tokens to follow a sequence's context. A drafter serves one sequence: each call sees the
 * whole context so far (prompt and every accepted output token), which may have dropped earlier
 * proposals the target rejected; a drafter with state (a draft model's KV cache) rolls itself back
 * to the part of the context it has seen.
 */
public interface Drafter extends AutoCloseable {
  /**
   * Up to {@code k} tokens to follow {@code context[0, length)}.
   *
   * @param context token ids (only the first {@code length} count)
   * @param length tokens of context, at least one
   * @param k most tokens to propose, at least one
   */
  Draft propose(int[] context, int length, int k);

  /**
   * Whether this drafter needs the target's final hidden states ({@link #observeHidden}), which the
   * caller then gets with {@link dev.ringmaster.runtime.LanguageModel#forwardHidden}.
   */
  default boolean needsHidden() {
    return false;
  }

  /** Which hidden states {@link #observeHidden} is handed, when {@link #needsHidden}. */
  default dev.ringmaster.runtime.HiddenCapture hiddenCapture() {
    return dev.ringmaster.runtime.HiddenCapture.FINAL;
  }

  /**
   * The target's hidden states ({@link #hiddenCapture}) of positions {@code [start, start + rows)}
   * of the context, every one of them standing (a verify pass gives its last token's and accepted
   * drafts' rows). Positions from {@code start} on replace any seen before.
   *
   * @param hidden {@code [rows, width]} from {@code offset} (in rows), {@code width} the capture's
   */
  default void observeHidden(int start, float[] hidden, int offset, int rows) {}

  /** Releases the drafter's caches. */
  @Override
  default void close() {}
}
