package dev.ringmaster.runtime;

/**
 * A small drafting network that reads the target's hidden states (an MTP layer, an EAGLE-3 head):
 * each row pairs a token with the hidden state of the position before it and predicts the token
 * after it. The first rows of a proposal read the target's hidden states ({@link #capture} says
 * which, {@link #targetWidth} values per row); each further, chained row reads the head's own
 * output hidden state of the previous row ({@link #chainWidth} values). The head keeps its
 * attention over earlier rows in a cache of its own ({@link #newCache}), positioned as the hidden
 * states' positions.
 */
public interface DraftHead extends AutoCloseable {
  /** The hidden states the target's forwards must return for this head. */
  HiddenCapture capture();

  /** Values per row of the target's hidden states this head reads. */
  int targetWidth();

  /** Values per row of the head's own output hidden state, which chained rows read. */
  int chainWidth();

  /** A new, empty cache for one sequence. */
  KvCache newCache();

  /**
   * Runs {@code tokens.length} rows fed the target's hidden states, appended to {@code cache}.
   *
   * @param tokens the token of each row
   * @param hidden {@code [tokens.length, targetWidth]}
   * @param cache the sequence's cache, advanced past the new rows
   * @return the last row's logits over the target's vocabulary and every row's output hidden state
   *     ({@code chainWidth} each)
   */
  HiddenLogits forward(int[] tokens, float[] hidden, KvCache cache);

  /**
   * Runs rows fed the head's own output hidden states ({@code [tokens.length, chainWidth]}), as
   * {@link #forward} does.
   */
  HiddenLogits chain(int[] tokens, float[] hidden, KvCache cache);

  /** Releases what the head holds apart from the target (its own weights). */
  @Override
  default void close() {}
}
