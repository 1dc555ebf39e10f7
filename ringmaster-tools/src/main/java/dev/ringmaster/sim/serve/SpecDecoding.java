package dev.ringmaster.sim.serve;

import java.util.List;

/**
 * Speculative decoding: {@code numSteps} draft forwards propose a tree of {@code numDraftTokens}
 * tokens, one target forward verifies all of them, and on average {@code acceptLength} tokens (the
 * bonus token included) are kept per cycle.
 *
 * @param algorithm EAGLE3 (a one-layer draft head) or MTP (the model's own next-token layer)
 * @param numSteps draft forwards per cycle
 * @param numDraftTokens tokens the verify forward checks per sequence
 * @param topK branching of each draft step (1 = a chain)
 * @param acceptLength mean tokens kept per cycle
 * @param verifyGraphed whether the draft and verify forwards replay captured CUDA graphs; the
 *     engine's GPU verify steps run eagerly (false), each collective then launched by every rank's
 *     host
 * @param acceptPerPosition the rate at which the draft token at each position is accepted (the
 *     engine's per-position statistics), or empty when only {@code acceptLength} is given; when
 *     given, {@code acceptLength} is 1 plus their sum
 */
public record SpecDecoding(
    String algorithm,
    int numSteps,
    int numDraftTokens,
    int topK,
    double acceptLength,
    boolean verifyGraphed,
    List<Double> acceptPerPosition) {

  /** Validates and derives. */
  public SpecDecoding {
    if (!algorithm.equals("EAGLE3") && !algorithm.equals("MTP")) {
      throw new IllegalArgumentException("speculative algorithm must be EAGLE3 or MTP");
    }
    if (numSteps < 1 || numDraftTokens < 2 || topK < 1) {
      throw new IllegalArgumentException("speculative steps >= 1, draft tokens >= 2, topk >= 1");
    }
    acceptPerPosition = List.copyOf(acceptPerPosition);
    if (!acceptPerPosition.isEmpty()) {
      acceptLength = acceptLengthOf(acceptPerPosition, numDraftTokens);
    }
    if (acceptLength < 1 || acceptLength > numDraftTokens) {
      throw new IllegalArgumentException(
          "accept length must be between 1 and the number of draft tokens ("
              + numDraftTokens
              + "), got "
              + acceptLength);
    }
  }

  /** Eagerly verified (the engine's path), acceptance given as a mean length. */
  public SpecDecoding(
      String algorithm, int numSteps, int numDraftTokens, int topK, double acceptLength) {
    this(algorithm, numSteps, numDraftTokens, topK, acceptLength, false, List.of());
  }

  /** Copy with the verify forward graph-captured or eager. */
  public SpecDecoding withVerifyGraphed(boolean graphed) {
    return new SpecDecoding(
        algorithm, numSteps, numDraftTokens, topK, acceptLength, graphed, acceptPerPosition);
  }

  /**
   * Mean tokens per cycle from per-position acceptance rates: the bonus (or corrected) token plus
   * the expected accepted draft tokens, as the engine's speculation controller counts them ({@code
   * 1 + a_1 + ... + a_k}). A draft token is kept only after every earlier one, so the rates cannot
   * rise with the position.
   */
  public static double acceptLengthOf(List<Double> rates, int numDraftTokens) {
    if (rates.size() > numDraftTokens - 1) {
      throw new IllegalArgumentException(
          "--speculative-accept-per-position gives "
              + rates.size()
              + " rates, but a verify of "
              + numDraftTokens
              + " tokens checks at most "
              + (numDraftTokens - 1)
              + " draft positions");
    }
    double sum = 1;
    double previous = 1;
    for (int i = 0; i < rates.size(); i++) {
      double a = rates.get(i);
      if (!(a >= 0 && a <= 1)) {
        throw new IllegalArgumentException(
            "--speculative-accept-per-position: rate "
                + a
                + " at position "
                + (i + 1)
                + " is not between 0 and 1");
      }
      if (a > previous + 1e-12) {
        throw new IllegalArgumentException(
            "--speculative-accept-per-position: rate "
                + a
                + " at position "
                + (i + 1)
                + " exceeds the rate before it ("
                + previous
                + "); a draft token is only kept after every earlier one");
      }
      previous = a;
      sum += a;
    }
    return sum;
  }

  /** Default branching: a chain when the draft tokens fit one per step, else a tree. */
  public static int defaultTopK(int numSteps, int numDraftTokens) {
    return numDraftTokens <= numSteps + 1 ? 1 : (int) Math.ceil((numDraftTokens - 1.0) / numSteps);
  }
}
