package dev.ringmaster.engine.batch;

/** Log-probabilities from a row of raw logits (log-softmax), computed in double for stability. */
final class Logprobs {
  private Logprobs() {}

  /** Natural log of the softmax normalizer of {@code n} logits at {@code off}. */
  static double logSumExp(float[] logits, int off, int n) {
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      max = Math.max(max, logits[off + i]);
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += Math.exp(logits[off + i] - max);
    }
    return max + Math.log(sum);
  }

  /**
   * The event for {@code token}, with its logprob and, when {@code top > 0}, the {@code top} most
   * likely tokens (ties broken by lower id).
   */
  static TokenEvent event(
      float[] logits, int off, int vocab, int token, int index, boolean stop, int top) {
    if (top < 0) {
      return new TokenEvent(token, index, stop, Float.NaN, new int[0], new float[0]);
    }
    double lse = logSumExp(logits, off, vocab);
    int k = Math.min(top, vocab);
    int[] ids = new int[k];
    float[] lps = new float[k];
    int filled = 0;
    for (int i = 0; i < vocab && k > 0; i++) {
      float v = logits[off + i];
      if (filled < k || v > logits[off + ids[filled - 1]]) {
        int pos = Math.min(filled, k - 1);
        while (pos > 0 && logits[off + ids[pos - 1]] < v) {
          ids[pos] = ids[pos - 1];
          pos--;
        }
        ids[pos] = i;
        filled = Math.min(filled + 1, k);
      }
    }
    for (int i = 0; i < k; i++) {
      lps[i] = (float) (logits[off + ids[i]] - lse);
    }
    return new TokenEvent(token, index, stop, (float) (logits[off + token] - lse), ids, lps);
  }
}
