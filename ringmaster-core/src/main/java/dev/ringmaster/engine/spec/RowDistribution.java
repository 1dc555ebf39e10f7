package dev.ringmaster.engine.spec;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.sampling.SamplingDistribution;
import java.util.Map;

/**
 * The distribution the plain sampler draws a token from, for one row of logits under a request's
 * parameters: logit bias, then temperature, top-k, top-p and min-p with {@link
 * dev.ringmaster.runtime.sampling.RowSampler}'s rules (ties kept). Rejection sampling needs it as a
 * whole vector, for the target and for a sampled draft alike. Penalties depend on every earlier
 * token, draft tokens included, and are refused here.
 */
public final class RowDistribution {
  private final SamplingParams params;
  private final int vocab;
  private final float[] biased;

  private RowDistribution(SamplingParams params, int vocab) {
    this.params = params;
    this.vocab = vocab;
    this.biased = new float[vocab];
  }

  /**
   * The distribution of {@code params} over rows of {@code vocab} logits.
   *
   * @throws IllegalArgumentException when {@code params} has penalties, or a logit bias outside the
   *     vocabulary
   */
  public static RowDistribution of(SamplingParams params, int vocab) {
    if (params.hasPenalties()) {
      throw new IllegalArgumentException(
          "speculative decoding does not take repetition, frequency or presence penalties (the"
              + " penalised distribution of a draft position depends on the draft tokens before"
              + " it): turn the penalties off or decode without speculation");
    }
    for (int id : params.logitBias().keySet()) {
      if (id >= vocab) {
        throw new IllegalArgumentException(
            "logit bias id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    return new RowDistribution(params, vocab);
  }

  /** Whether every row's token is its argmax (temperature 0 or top-k 1). */
  public boolean greedy() {
    return params.isGreedy();
  }

  /** The request's parameters. */
  public SamplingParams params() {
    return params;
  }

  /** The seed of the request's draws. */
  public long seed() {
    return params.seed();
  }

  /** The token plain greedy decoding picks: the argmax after bias, lowest id on ties. */
  public int argmax(float[] logits, int off) {
    if (params.logitBias().isEmpty()) {
      return dev.ringmaster.backend.cpu.CpuOps.argmax(logits, off, vocab);
    }
    System.arraycopy(logits, off, biased, 0, vocab);
    for (Map.Entry<Integer, Float> e : params.logitBias().entrySet()) {
      biased[e.getKey()] += e.getValue(); // in float, as the plain sampler adds it
    }
    return dev.ringmaster.backend.cpu.CpuOps.argmax(biased, 0, vocab);
  }

  /** The probability of every token for the row at {@code off} (one-hot when greedy). */
  public double[] probabilities(float[] logits, int off) {
    if (greedy()) {
      double[] p = new double[vocab];
      p[argmax(logits, off)] = 1;
      return p;
    }
    double[] l = new double[vocab];
    for (int i = 0; i < vocab; i++) {
      l[i] = logits[off + i];
    }
    for (Map.Entry<Integer, Float> e : params.logitBias().entrySet()) {
      l[e.getKey()] += e.getValue();
    }
    boolean topKOff = params.topK() <= 0 || params.topK() >= vocab;
    if (!topKOff || params.topP() < 1) {
      return SamplingDistribution.probabilities(
          l, params.temperature(), params.topK(), params.topP(), params.minP());
    }
    // Temperature and min-p only: no sort needed.
    double max = Double.NEGATIVE_INFINITY;
    for (double v : l) {
      max = Math.max(max, v);
    }
    double sum = 0;
    for (int i = 0; i < vocab; i++) {
      double w = Math.exp((l[i] - max) / params.temperature());
      l[i] = w >= params.minP() ? w : 0;
      sum += l[i];
    }
    for (int i = 0; i < vocab; i++) {
      l[i] /= sum;
    }
    return l;
  }

  /**
   * The token at which the running sum of {@code weights} (non-negative, not necessarily
   * normalised) passes {@code u} times their total, for a uniform {@code u} in [0, 1).
   */
  public static int draw(double[] weights, double u) {
    double total = 0;
    for (double w : weights) {
      total += w;
    }
    if (!(total > 0)) {
      throw new IllegalArgumentException("no token has positive weight");
    }
    double target = u * total;
    double acc = 0;
    int last = -1;
    for (int i = 0; i < weights.length; i++) {
      if (weights[i] > 0) {
        acc += weights[i];
        last = i;
        if (target < acc) {
          return i;
        }
      }
    }
    return last; // rounding at the very end
  }
}
