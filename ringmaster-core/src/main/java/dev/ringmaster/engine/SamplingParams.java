package dev.ringmaster.engine;

import java.util.List;
import java.util.Map;

/**
 * How tokens are chosen and when generation stops. The order of operations on a row of logits is
 * that of {@link dev.ringmaster.runtime.sampling.RowSampler}: logit bias, repetition penalty,
 * frequency and presence penalties, then (logprobs are taken here) temperature, top-k, top-p, min-p
 * and a draw.
 *
 * @param temperature 0 for greedy; otherwise logits are divided by it before sampling
 * @param topP nucleus sampling: keep the smallest set of most likely tokens whose probability
 *     reaches it, among those top-k kept (1 = off)
 * @param topK keep only the k most likely tokens (0 or negative = off)
 * @param seed random seed for sampling: with the same logits, the same seed gives the same tokens
 * @param maxNewTokens tokens to generate at most
 * @param ignoreEos keep generating past end-of-sequence tokens
 * @param stopTokenIds extra token ids that end generation
 * @param minP keep only tokens whose probability is at least this fraction of the most likely
 *     token's (0 = off)
 * @param repetitionPenalty divides positive logits and multiplies negative ones of every token seen
 *     in the prompt or the output (1 = off; vLLM and SGLang semantics)
 * @param frequencyPenalty subtracted from a token's logit once per time it occurs in the output (0
 *     = off; OpenAI semantics)
 * @param presencePenalty subtracted from the logit of every token that occurs in the output (0 =
 *     off; OpenAI semantics)
 * @param logitBias token id to a value added to its logit before everything else
 */
public record SamplingParams(
    double temperature,
    double topP,
    int topK,
    long seed,
    int maxNewTokens,
    boolean ignoreEos,
    List<Integer> stopTokenIds,
    double minP,
    double repetitionPenalty,
    double frequencyPenalty,
    double presencePenalty,
    Map<Integer, Float> logitBias) {

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
    if (!(minP >= 0 && minP <= 1)) {
      throw new IllegalArgumentException("min_p must be in [0, 1], got " + minP);
    }
    if (!(repetitionPenalty > 0) || Double.isInfinite(repetitionPenalty)) {
      throw new IllegalArgumentException(
          "repetition_penalty must be > 0 (1 = off), got " + repetitionPenalty);
    }
    if (!Double.isFinite(frequencyPenalty)) {
      throw new IllegalArgumentException(
          "frequency_penalty must be a finite number, got " + frequencyPenalty);
    }
    if (!Double.isFinite(presencePenalty)) {
      throw new IllegalArgumentException(
          "presence_penalty must be a finite number, got " + presencePenalty);
    }
    stopTokenIds = List.copyOf(stopTokenIds);
    logitBias = Map.copyOf(logitBias);
    for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
      if (e.getKey() < 0) {
        throw new IllegalArgumentException("logit_bias token id must be >= 0, got " + e.getKey());
      }
      if (!Float.isFinite(e.getValue())) {
        throw new IllegalArgumentException(
            "logit_bias of token " + e.getKey() + " must be a finite number, got " + e.getValue());
      }
    }
  }

  /** Temperature, top-p and top-k sampling without penalties, min-p or bias. */
  public SamplingParams(
      double temperature,
      double topP,
      int topK,
      long seed,
      int maxNewTokens,
      boolean ignoreEos,
      List<Integer> stopTokenIds) {
    this(
        temperature, topP, topK, seed, maxNewTokens, ignoreEos, stopTokenIds, 0, 1, 0, 0, Map.of());
  }

  /** Greedy decoding of {@code maxNewTokens} tokens. */
  public static SamplingParams greedy(int maxNewTokens) {
    return new SamplingParams(0, 1, 0, 0, maxNewTokens, false, List.of());
  }

  /** These parameters with min-p {@code minP}. */
  public SamplingParams withMinP(double minP) {
    return new SamplingParams(
        temperature,
        topP,
        topK,
        seed,
        maxNewTokens,
        ignoreEos,
        stopTokenIds,
        minP,
        repetitionPenalty,
        frequencyPenalty,
        presencePenalty,
        logitBias);
  }

  /** These parameters with the given repetition, frequency and presence penalties. */
  public SamplingParams withPenalties(double repetition, double frequency, double presence) {
    return new SamplingParams(
        temperature,
        topP,
        topK,
        seed,
        maxNewTokens,
        ignoreEos,
        stopTokenIds,
        minP,
        repetition,
        frequency,
        presence,
        logitBias);
  }

  /** These parameters with logit bias {@code bias} (token id to added value). */
  public SamplingParams withLogitBias(Map<Integer, Float> bias) {
    return new SamplingParams(
        temperature,
        topP,
        topK,
        seed,
        maxNewTokens,
        ignoreEos,
        stopTokenIds,
        minP,
        repetitionPenalty,
        frequencyPenalty,
        presencePenalty,
        bias);
  }

  /** Whether tokens are picked by argmax (of the logits after bias and penalties). */
  public boolean isGreedy() {
    return temperature == 0 || topK == 1;
  }

  /** Whether any of the repetition, frequency or presence penalties is on. */
  public boolean hasPenalties() {
    return repetitionPenalty != 1 || frequencyPenalty != 0 || presencePenalty != 0;
  }

  /** Whether the token is the argmax of the model's raw logits (greedy, no penalty, no bias). */
  public boolean isRawGreedy() {
    return isGreedy() && !hasPenalties() && logitBias.isEmpty();
  }
}
