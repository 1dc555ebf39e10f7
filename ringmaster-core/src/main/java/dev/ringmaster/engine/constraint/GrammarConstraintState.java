package dev.ringmaster.engine.constraint;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One request's position in a grammar: its own Earley chart, advanced by each generated token's
 * bytes. Owned by the engine thread; not thread-safe.
 */
final class GrammarConstraintState implements ConstraintState {
  private final GrammarConstraint constraint;
  private final EarleyChart chart;
  private GrammarConstraint.Mask mask; // of the chart as it is; null until asked
  private CompletableFuture<GrammarConstraint.Mask> pending; // computing it on an executor
  private boolean ended;

  GrammarConstraintState(GrammarConstraint constraint, EarleyChart chart) {
    this.constraint = constraint;
    this.chart = chart;
  }

  @Override
  public long[] allowedTokens() {
    return mask().bits();
  }

  @Override
  public CompletableFuture<long[]> allowedTokensAsync(Executor executor) {
    if (mask == null && pending == null) {
      mask = constraint.cachedMask(chart);
      if (mask == null) {
        // The chart is walked there (pushed and popped); accept waits before it moves the chart.
        pending = CompletableFuture.supplyAsync(() -> constraint.mask(chart), executor);
      }
    }
    return mask != null
        ? CompletableFuture.completedFuture(mask.bits())
        : pending.thenApply(GrammarConstraint.Mask::bits);
  }

  private GrammarConstraint.Mask mask() {
    if (mask == null) {
      mask = pending != null ? pending.join() : constraint.mask(chart);
      pending = null;
    }
    return mask;
  }

  /** Waits for a mask computation that walks the chart, so that the chart may be changed. */
  private void settle() {
    if (pending != null) {
      GrammarConstraint.Mask m = pending.exceptionally(e -> null).join();
      pending = null;
      mask = m;
    }
  }

  @Override
  public void accept(int token) {
    settle();
    TokenVocabulary vocab = constraint.vocabulary();
    if (vocab.isEos(token) && chart.accepting()) {
      ended = true;
      return;
    }
    byte[] bytes = vocab.bytes(token);
    int pushed = 0;
    if (bytes != null) {
      while (pushed < bytes.length && chart.push(bytes[pushed] & 0xff)) {
        pushed++;
      }
    }
    if (bytes == null || bytes.length == 0 || pushed < bytes.length) {
      for (; pushed > 0; pushed--) {
        chart.pop();
      }
      throw new IllegalStateException("token " + token + " is not allowed by the grammar here");
    }
    mask = null;
  }

  @Override
  public boolean accepting() {
    settle();
    return chart.accepting();
  }

  /**
   * Whether generation must end here; without the chart's mask at hand, a walk that stops at the
   * first allowed token answers, so the engine never waits for a whole mask to learn this.
   */
  @Override
  public boolean isComplete() {
    if (ended) {
      return true;
    }
    settle();
    if (mask == null) {
      mask = constraint.cachedMask(chart);
    }
    return mask != null ? !mask.continues() : !constraint.vocabulary().anyAllowed(chart);
  }

  @Override
  public byte[] forcedBytes(int maxBytes) {
    settle();
    return ended ? new byte[0] : forcedFromChart(maxBytes);
  }

  @Override
  public int[] jumpForward(int token, int maxBytes) {
    settle();
    TokenVocabulary vocab = constraint.vocabulary();
    byte[] bytes = vocab.bytes(token);
    if (ended || vocab.isEos(token) || bytes == null || bytes.length == 0) {
      return null;
    }
    int pushed = 0;
    try {
      while (pushed < bytes.length && chart.push(bytes[pushed] & 0xff)) {
        pushed++;
      }
      return pushed < bytes.length
          ? null
          : JumpForward.retokenize(vocab, bytes, forcedFromChart(maxBytes));
    } finally {
      for (; pushed > 0; pushed--) {
        chart.pop();
      }
    }
  }

  /** The bytes forced from the chart as it is (the chart is walked and left as it was). */
  private byte[] forcedFromChart(int maxBytes) {
    JumpForward.Bytes out = new JumpForward.Bytes();
    int pushed = 0;
    try {
      while (pushed < maxBytes && !chart.accepting()) {
        int b = chart.onlyNextByte();
        if (b < 0 || !chart.push(b)) {
          break;
        }
        pushed++;
        out.add(b);
      }
    } finally {
      for (; pushed > 0; pushed--) {
        chart.pop();
      }
    }
    return out.toArray();
  }
}
