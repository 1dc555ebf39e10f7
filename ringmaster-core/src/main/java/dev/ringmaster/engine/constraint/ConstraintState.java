package dev.ringmaster.engine.constraint;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One request's position in its constraint: advanced by each generated token, it gives the mask for
 * the next one. Owned by the engine thread; not thread-safe.
 */
public interface ConstraintState {
  /** The tokens allowed next as a bitset over the vocabulary (shared; do not modify). */
  long[] allowedTokens();

  /**
   * The mask {@link #allowedTokens()} gives, already completed when it is cached, else computed on
   * {@code executor}, so that a cache miss runs beside the model's forward instead of before it.
   * Until the next {@link #accept} every call returns the same future; {@link #accept} waits for
   * it, so the computation never sees the state move.
   */
  CompletableFuture<long[]> allowedTokensAsync(Executor executor);

  /**
   * Moves past a generated token; an end-of-sequence token ends the constraint where it accepts.
   *
   * @throws IllegalStateException when the token was not allowed (the mask was not applied)
   */
  void accept(int token);

  /** Whether the output so far is a whole match. */
  boolean accepting();

  /**
   * Whether generation must end here: an end-of-sequence token was taken, or no other token can
   * follow (with a byte-level vocabulary, which has every single byte, the output is then a whole
   * match).
   */
  boolean isComplete();

  /**
   * The longest byte string every continuation of the output from here starts with: bytes are
   * followed while exactly one byte can come next and the output is not a whole match (where
   * end-of-sequence could come instead); at most {@code maxBytes}. Empty when nothing is forced.
   * The state does not move.
   */
  byte[] forcedBytes(int maxBytes);

  /**
   * Jump-forward decoding: the tokens to append instead of the just sampled {@code token}, which
   * spell its bytes followed by the bytes forced after it (at most {@code maxBytes} of them), as
   * the vocabulary's tokenizer splits that text; null when nothing is forced after it, the
   * vocabulary has no tokenizer, or the split does not spell exactly those bytes. The state does
   * not move; each returned token is then {@linkplain #accept accepted} in turn.
   */
  int[] jumpForward(int token, int maxBytes);
}
