package dev.ringmaster.engine.constraint;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One request's position in a DFA constraint: advanced by each generated token, it gives the mask
 * for the next one. Owned by the engine thread; not thread-safe.
 */
final class DfaConstraintState implements ConstraintState {
  private final TokenConstraint constraint;
  private int state;
  private boolean ended;
  private CompletableFuture<long[]> pending; // the mask of the state as it is, once asked

  DfaConstraintState(TokenConstraint constraint) {
    this.constraint = constraint;
    this.state = constraint.dfa().start();
  }

  /** The tokens allowed next (shared bitset; do not modify). */
  @Override
  public long[] allowedTokens() {
    return constraint.mask(state);
  }

  @Override
  public CompletableFuture<long[]> allowedTokensAsync(Executor executor) {
    if (pending == null) {
      constraint.prefetch(executor);
      long[] cached = constraint.cachedMask(state);
      int s = state;
      pending =
          cached != null
              ? CompletableFuture.completedFuture(cached)
              : CompletableFuture.supplyAsync(() -> constraint.mask(s), executor);
    }
    return pending;
  }

  /**
   * Moves past a generated token; an end-of-sequence token ends the constraint where it accepts.
   *
   * @throws IllegalStateException when the token was not allowed (the mask was not applied)
   */
  @Override
  public void accept(int token) {
    if (pending != null) {
      pending.exceptionally(e -> null).join();
      pending = null;
    }
    if (constraint.vocabulary().isEos(token) && constraint.dfa().accepting(state)) {
      ended = true;
      return;
    }
    int next = constraint.advance(state, token);
    if (next < 0) {
      throw new IllegalStateException(
          "token " + token + " is not allowed by the constraint in state " + state);
    }
    state = next;
  }

  /** Whether the output so far is a whole match. */
  @Override
  public boolean accepting() {
    return constraint.dfa().accepting(state);
  }

  /**
   * Whether generation must end here: an end-of-sequence token was taken, or no other token can
   * follow (with a byte-level vocabulary, which has every single byte, the output is then a whole
   * match).
   */
  @Override
  public boolean isComplete() {
    return ended || !constraint.continues(state);
  }

  @Override
  public byte[] forcedBytes(int maxBytes) {
    return ended ? new byte[0] : forcedFrom(state, maxBytes);
  }

  @Override
  public int[] jumpForward(int token, int maxBytes) {
    TokenVocabulary vocab = constraint.vocabulary();
    if (ended || vocab.isEos(token)) {
      return null;
    }
    int after = constraint.advance(state, token);
    if (after < 0) {
      return null;
    }
    return JumpForward.retokenize(vocab, vocab.bytes(token), forcedFrom(after, maxBytes));
  }

  /** The bytes forced from automaton state {@code s}: its only exit, while it has one. */
  private byte[] forcedFrom(int s, int maxBytes) {
    ByteDfa dfa = constraint.dfa();
    JumpForward.Bytes out = new JumpForward.Bytes();
    for (int n = 0; n < maxBytes && !dfa.accepting(s); n++) {
      int only = -1;
      for (int b = 0; b < 256; b++) {
        if (dfa.next(s, b) >= 0) {
          if (only >= 0) {
            return out.toArray(); // a choice: nothing more is forced
          }
          only = b;
        }
      }
      if (only < 0) {
        break;
      }
      out.add(only);
      s = dfa.next(s, only);
    }
    return out.toArray();
  }
}
