package dev.ringmaster.engine.spec;

import java.util.Arrays;

/**
 * Prompt/context lookup: finds the latest earlier occurrence of the context's last {@code n}
 * tokens, trying {@code n} from a maximum down to a minimum, and proposes the tokens that followed
 * it. No model runs; repetitive text (code, quoted passages, lists) accepts most proposals.
 */
public final class NgramDrafter implements Drafter {
  private final int minMatch;
  private final int maxMatch;

  /** A drafter matching suffixes of {@code minMatch} to {@code maxMatch} tokens. */
  public NgramDrafter(int minMatch, int maxMatch) {
    if (minMatch < 1 || maxMatch < minMatch) {
      throw new IllegalArgumentException(
          "n-gram match lengths must satisfy 1 <= min <= max, got " + minMatch + ", " + maxMatch);
    }
    this.minMatch = minMatch;
    this.maxMatch = maxMatch;
  }

  @Override
  public Draft propose(int[] context, int length, int k) {
    for (int n = Math.min(maxMatch, length - 1); n >= minMatch; n--) {
      int suffix = length - n;
      // Latest start first: recent text predicts the next tokens best.
      for (int start = suffix - 1; start >= 0; start--) {
        if (Arrays.equals(context, start, start + n, context, suffix, length)) {
          int from = start + n;
          int to = Math.min(from + k, length);
          return new Draft(Arrays.copyOfRange(context, from, to), null);
        }
      }
    }
    return Draft.EMPTY;
  }
}
