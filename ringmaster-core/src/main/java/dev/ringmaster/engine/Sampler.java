package dev.ringmaster.engine;

import dev.ringmaster.runtime.sampling.RowSampler;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.Map;

/**
 * Picks the next tokens of one sequence on the CPU ({@link RowSampler}'s steps: bias, penalties,
 * temperature, top-k, top-p, min-p), and fills {@link SamplingBatch} rows from a request's
 * parameters for batched and device sampling. The draw for output token {@code i} is a function of
 * (seed, i) only: the same seed and the same logits give the same tokens.
 */
public final class Sampler {
  private final SamplingParams params;
  private final TokenCounts counts;
  private final SamplingBatch batch = new SamplingBatch();
  private long step;

  /** A sampler for one sequence without a prompt history (penalties see only the output). */
  public Sampler(SamplingParams params) {
    this(params, new int[0]);
  }

  /** A sampler for one sequence whose prompt is {@code prompt}. */
  public Sampler(SamplingParams params, int[] prompt) {
    this.params = params;
    this.counts = params.hasPenalties() ? new TokenCounts(prompt) : null;
  }

  /** Index of the largest of {@code n} values at {@code off} (lowest index on ties). */
  public static int argmax(float[] x, int off, int n) {
    return dev.ringmaster.backend.cpu.CpuOps.argmax(x, off, n);
  }

  /**
   * Chooses the next token from {@code vocab} logits at {@code off}; {@link #accept} then records
   * the token actually used (sampling again before that draws the same token).
   */
  public int sample(float[] logits, int off, int vocab) {
    return sample(logits, off, vocab, -1).tokens()[0];
  }

  /**
   * Chooses the next token and its logprobs ({@code topLogprobs}: -1 none, 0 the token's, n also n
   * alternatives).
   */
  public SampledTokens sample(float[] logits, int off, int vocab, int topLogprobs) {
    if (params.isRawGreedy() && topLogprobs < 0) {
      return SampledTokens.tokensOnly(new int[] {argmax(logits, off, vocab)});
    }
    batch.clear();
    addRow(batch, params, step, counts, topLogprobs);
    return batch.sampleOnCpu(logits, off, vocab);
  }

  /** Records the token that was used as output {@link #steps()}, and moves to the next step. */
  public void accept(int token) {
    if (counts != null) {
      counts.addOutput(token);
    }
    step++;
  }

  /** Tokens accepted so far. */
  public long steps() {
    return step;
  }

  /**
   * Appends a row for a request to {@code batch}.
   *
   * @param step index among the request's outputs of the token being chosen
   * @param counts the request's seen tokens (needed only when it has penalties; may be null
   *     otherwise)
   * @param topLogprobs -1 none, 0 the chosen token's, n also n alternatives
   */
  public static void addRow(
      SamplingBatch batch, SamplingParams p, long step, TokenCounts counts, int topLogprobs) {
    batch.addRow(
        (float) p.temperature(),
        p.topK(),
        (float) p.topP(),
        (float) p.minP(),
        p.seed(),
        step,
        (float) p.repetitionPenalty(),
        (float) p.frequencyPenalty(),
        (float) p.presencePenalty(),
        topLogprobs);
    if (p.hasPenalties()) {
      if (counts == null) {
        throw new IllegalArgumentException("a request with penalties needs its token counts");
      }
      for (int i = 0; i < counts.size(); i++) {
        batch.addSeenToken(counts.token(i), counts.outputCount(i));
      }
    }
    for (Map.Entry<Integer, Float> e : p.logitBias().entrySet()) {
      batch.addBias(e.getKey(), e.getValue());
    }
  }
}
