package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.sampling.Philox;
import java.util.Arrays;

/**
 * A draft model run for {@code k} steps with its own KV cache: greedy when the request is greedy,
 * else sampled from its own distribution under the request's temperature / top-k / top-p / min-p
 * (which the verifier needs, and gets, as {@link Draft#probabilities}). The cache holds the tokens
 * the draft has been fed; each proposal first rolls it back to the longest prefix that is still the
 * sequence's context (rejected draft tokens drop out with {@link KvCache#setLength}) and feeds the
 * context tokens it has not seen in one forward.
 */
public final class ModelDrafter implements Drafter {
  /** Philox round of the draft model's own draws. */
  static final int ROUND_DRAFT = 1003;

  /** Mixed into the request's seed so draft draws are independent of the verifier's. */
  private static final long DRAFT_SEED_SALT = 0x5DEECE66DL;

  private final LanguageModel model;
  private final RowDistribution rule;
  private final int vocab;
  private final KvCache cache;
  private int[] fed = new int[64];

  /**
   * A drafter over {@code model}, choosing tokens by {@code rule}.
   *
   * @param model the draft model (its vocabulary is the target's)
   * @param rule the request's sampling rule over the draft model's vocabulary
   */
  public ModelDrafter(LanguageModel model, RowDistribution rule) {
    this.model = model;
    this.rule = rule;
    this.vocab = model.config().vocabSize();
    this.cache = model.newCache();
  }

  /** The draft model's cache (for tests of the rollback). */
  KvCache cache() {
    return cache;
  }

  @Override
  public Draft propose(int[] context, int length, int k) {
    int common = 0;
    int held = cache.length();
    while (common < held && common < length && fed[common] == context[common]) {
      common++;
    }
    // The last context token is always fed: its logits give the first draft token.
    common = Math.min(common, length - 1);
    cache.setLength(common);
    int[] pending = Arrays.copyOfRange(context, common, length);
    record(pending, common);
    float[] logits =
        model.forward(
            pending,
            BatchLayout.single(pending.length, common),
            new KvCache[] {cache},
            new int[] {pending.length - 1});
    int[] tokens = new int[k];
    double[][] probs = rule.greedy() ? null : new double[k][];
    long seed = rule.seed() ^ DRAFT_SEED_SALT;
    for (int i = 0; i < k; i++) {
      if (probs == null) {
        tokens[i] = rule.argmax(logits, 0);
      } else {
        probs[i] = rule.probabilities(logits, 0);
        tokens[i] = RowDistribution.draw(probs[i], Philox.uniform(seed, length + i, ROUND_DRAFT));
      }
      if (i + 1 < k) {
        record(new int[] {tokens[i]}, cache.length());
        logits = model.forwardAll(new int[] {tokens[i]}, cache);
      }
    }
    if (logits.length != vocab) {
      throw new IllegalStateException("draft model returned " + logits.length + " logits");
    }
    return new Draft(tokens, probs);
  }

  private void record(int[] tokens, int at) {
    if (at + tokens.length > fed.length) {
      fed = Arrays.copyOf(fed, Math.max(fed.length * 2, at + tokens.length));
    }
    System.arraycopy(tokens, 0, fed, at, tokens.length);
  }

  @Override
  public void close() {
    cache.close();
  }
}
