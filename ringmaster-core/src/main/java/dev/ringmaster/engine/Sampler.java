package dev.ringmaster.engine;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token from a row of logits: argmax when greedy, else temperature, top-k, top-p and
 * a draw from a seeded generator (the same seed gives the same tokens).
 */
public final class Sampler {
  private final SamplingParams params;
  private final SplittableRandom random;

  /** A sampler for one sequence. */
  public Sampler(SamplingParams params) {
    this.params = params;
    this.random = new SplittableRandom(params.seed());
  }

  /** Index of the largest of {@code n} values at {@code off} (lowest index on ties). */
  public static int argmax(float[] x, int off, int n) {
    return dev.ringmaster.backend.cpu.CpuOps.argmax(x, off, n);
  }

  /** Chooses a token from {@code vocab} logits at {@code off}. */
  public int sample(float[] logits, int off, int vocab) {
    if (params.isGreedy()) {
      return argmax(logits, off, vocab);
    }
    Integer[] order = new Integer[vocab];
    for (int i = 0; i < vocab; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Float.compare(logits[off + b], logits[off + a]));
    int keep = params.topK() > 0 ? Math.min(params.topK(), vocab) : vocab;
    double max = logits[off + order[0]];
    double[] probs = new double[keep];
    double sum = 0;
    for (int i = 0; i < keep; i++) {
      probs[i] = Math.exp((logits[off + order[i]] - max) / params.temperature());
      sum += probs[i];
    }
    int cut = keep;
    if (params.topP() < 1) {
      double acc = 0;
      for (int i = 0; i < keep; i++) {
        acc += probs[i] / sum;
        if (acc >= params.topP()) {
          cut = i + 1;
          break;
        }
      }
    }
    double total = 0;
    for (int i = 0; i < cut; i++) {
      total += probs[i];
    }
    double r = random.nextDouble() * total;
    for (int i = 0; i < cut; i++) {
      r -= probs[i];
      if (r < 0) {
        return order[i];
      }
    }
    return order[cut - 1];
  }
}
