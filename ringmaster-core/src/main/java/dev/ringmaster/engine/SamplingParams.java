package dev.ringmaster.engine;

import java.util.List;

/**
 * How tokens are chosen and when generation stops.
 *
 * @param temperature 0 for greedy; otherwise logits are divided by it before sampling
 * @param topP nucleus sampling: keep the smallest set of tokens whose probability reaches it (1 =
 *     off)
 * @param topK keep only the k most likely tokens (0 or negative = off)
 * @param seed random seed for sampling
 * @param maxNewTokens tokens to generate at most
 * @param ignoreEos keep generating past end-of-sequence tokens
 * @param stopTokenIds extra token ids that end generation
 */
public record SamplingParams(
    double temperature,
    double topP,
    int topK,
    long seed,
    int maxNewTokens,
    boolean ignoreEos,
    List<Integer> stopTokenIds) {

  /** Validates ranges and reports the offending parameter by name. */
  public SamplingParams {
    if (!(temperature >= 0) || Double.isInfinite(temperature)) {
      throw new IllegalArgumentException("temperature must be >= 0, got " + temperature);
    }
    if (!(topP > 0 && topP <= 1)) {
      throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
    }
    if (maxNewTokens < 0) {
      throw new IllegalArgumentException("max_new_tokens must be >= 0, got " + maxNewTokens);
    }
    stopTokenIds = List.copyOf(stopTokenIds);
  }

  /** Greedy decoding of {@code maxNewTokens} tokens. */
  public static SamplingParams greedy(int maxNewTokens) {
    return new SamplingParams(0, 1, 0, 0, maxNewTokens, false, List.of());
  }

  /** Whether tokens are picked by argmax. */
  public boolean isGreedy() {
    return temperature == 0 || topK == 1;
  }
}
