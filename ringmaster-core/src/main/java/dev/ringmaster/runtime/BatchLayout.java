package dev.ringmaster.runtime;

/**
 * Where each token of a forward batch belongs: the batch holds the new tokens of several sequences,
 * each sequence's tokens contiguous and in position order.
 *
 * @param seqStart for sequence {@code s}, index of its first token in the batch; length {@code
 *     numSeqs + 1} (the last entry is the token count)
 * @param positions position of each token in its sequence
 */
public record BatchLayout(int[] seqStart, int[] positions) {
  /** Number of tokens. */
  public int numTokens() {
    return positions.length;
  }

  /** Number of sequences. */
  public int numSeqs() {
    return seqStart.length - 1;
  }

  /** A batch of one sequence whose new tokens start at {@code startPos}. */
  public static BatchLayout single(int numTokens, int startPos) {
    int[] pos = new int[numTokens];
    for (int i = 0; i < numTokens; i++) {
      pos[i] = startPos + i;
    }
    return new BatchLayout(new int[] {0, numTokens}, pos);
  }
}
