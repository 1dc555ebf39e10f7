package dev.ringmaster.engine.constraint;

/**
 * One request's position in its constraint: advanced by each generated token, it gives the mask for
 * the next one. Owned by the engine thread; not thread-safe.
 */
public interface ConstraintState {
  /** The tokens allowed next as a bitset over the vocabulary (shared; do not modify). */
  long[] allowedTokens();

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
}
