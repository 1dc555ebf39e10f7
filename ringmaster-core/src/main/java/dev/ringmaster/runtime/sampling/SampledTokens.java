package dev.ringmaster.runtime.sampling;

import java.util.Arrays;

/**
 * The tokens chosen for a {@link SamplingBatch}, one per row, and the logprobs its rows asked for.
 * Logprobs are natural log-softmax values of the logits after logit bias and penalties, before
 * temperature, top-k, top-p and min-p (vLLM's "processed" logits without the sampling filters).
 *
 * @param tokens token id per row
 * @param logprobs log-probability of each row's token, NaN where the row asked for none
 * @param topStride alternatives stored per row in {@code topIds} and {@code topLogprobs}
 * @param topIds row {@code r}'s {@code topLogprobs[r]} most likely tokens at {@code r * topStride},
 *     best first, ties to the lower id
 * @param topLogprobs their log-probabilities
 */
public record SampledTokens(
    int[] tokens, float[] logprobs, int topStride, int[] topIds, float[] topLogprobs) {

  /** Empty results sized for {@code batch}: logprobs NaN, alternatives unset. */
  public static SampledTokens forBatch(SamplingBatch batch) {
    int rows = batch.rows();
    int stride = batch.maxTopLogprobs();
    float[] lp = new float[rows];
    Arrays.fill(lp, Float.NaN);
    return new SampledTokens(
        new int[rows], lp, stride, new int[rows * stride], new float[rows * stride]);
  }

  /** Greedy tokens without logprobs. */
  public static SampledTokens tokensOnly(int[] tokens) {
    float[] lp = new float[tokens.length];
    Arrays.fill(lp, Float.NaN);
    return new SampledTokens(tokens, lp, 0, new int[0], new float[0]);
  }

  /** The first {@code n} alternative ids of row {@code r}. */
  public int[] topIds(int r, int n) {
    return Arrays.copyOfRange(topIds, r * topStride, r * topStride + n);
  }

  /** The first {@code n} alternative logprobs of row {@code r}. */
  public float[] topLogprobs(int r, int n) {
    return Arrays.copyOfRange(topLogprobs, r * topStride, r * topStride + n);
  }

  /**
   * Sets row {@code dstRow} to row {@code srcRow} of {@code src}: the token, its logprob and as
   * many alternatives as both strides hold.
   */
  public void copyRowFrom(SampledTokens src, int srcRow, int dstRow) {
    tokens[dstRow] = src.tokens[srcRow];
    logprobs[dstRow] = src.logprobs[srcRow];
    int n = Math.min(topStride, src.topStride);
    System.arraycopy(src.topIds, srcRow * src.topStride, topIds, dstRow * topStride, n);
    System.arraycopy(src.topLogprobs, srcRow * src.topStride, topLogprobs, dstRow * topStride, n);
  }
}
