package dev.ringmaster.engine.constraint;

/**
 * One request's position in a grammar: its own Earley chart, advanced by each generated token's
 * bytes. Owned by the engine thread; not thread-safe.
 */
final class GrammarConstraintState implements ConstraintState {
  private final GrammarConstraint constraint;
  private final EarleyChart chart;
  private GrammarConstraint.Mask mask; // of the chart as it is; null until asked
  private boolean ended;

  GrammarConstraintState(GrammarConstraint constraint, EarleyChart chart) {
    this.constraint = constraint;
    this.chart = chart;
  }

  @Override
  public long[] allowedTokens() {
    return mask().bits();
  }

  private GrammarConstraint.Mask mask() {
    if (mask == null) {
      mask = constraint.mask(chart);
    }
    return mask;
  }

  @Override
  public void accept(int token) {
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
    return chart.accepting();
  }

  @Override
  public boolean isComplete() {
    return ended || !mask().continues();
  }
}
