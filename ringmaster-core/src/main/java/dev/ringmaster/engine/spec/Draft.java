package dev.ringmaster.engine.spec;

/**
 * Tokens a drafter proposes to follow the context.
 *
 * @param tokens the proposed tokens, in order (may be empty)
 * @param probabilities for each token, the full distribution over the vocabulary it was drawn from;
 *     null when every token is a certain guess (a point mass: greedy drafts and n-gram drafts)
 */
public record Draft(int[] tokens, double[][] probabilities) {
  /** No proposal. */
  public static final Draft EMPTY = new Draft(new int[0], null);

  /** Checks that there is one distribution per token when there are any. */
  public Draft {
    if (probabilities != null && probabilities.length != tokens.length) {
      throw new IllegalArgumentException(
          "a draft of "
              + tokens.length
              + " tokens needs as many distributions, got "
              + probabilities.length);
    }
  }

  /** Number of proposed tokens. */
  public int length() {
    return tokens.length;
  }
}
