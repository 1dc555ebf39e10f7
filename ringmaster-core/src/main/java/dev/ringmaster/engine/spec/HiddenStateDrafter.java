package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.sampling.Philox;
import java.util.Arrays;

/**
 * Drafts with a head over the target's hidden states ({@link DraftHead}: the model's own MTP layer,
 * or an EAGLE-3 head). The head's cache row {@code j} pairs context token {@code j + 1} with the
 * target's hidden state at position {@code j} (the final one for MTP, three layers' for EAGLE-3),
 * so it holds a row for each position whose hidden state the target computed and whose next token
 * stands. A proposal first rolls the cache back to those rows (the previous proposal's chained rows
 * drop out with {@link KvCache#setLength}), feeds the rows it has not yet seen in one step, which
 * predicts the first draft token, then chains: each further row pairs the previous draft token with
 * the layer's own output hidden state. Greedy when the request is greedy, else sampled from the
 * layer's distribution under the request's transform (returned for the verifier).
 */
public final class HiddenStateDrafter implements Drafter {
  /** Philox round of the head's own draws. */
  static final int ROUND_DRAFT = 1004;

  /** Mixed into the request's seed so draft draws are independent of the verifier's. */
  private static final long DRAFT_SEED_SALT = 0x4E455854L;

  private final DraftHead layer;
  private final RowDistribution rule;
  private final int width;
  private final int chainWidth;
  private final KvCache cache;
  private float[] hidden = new float[0];

  /** Hidden states are held for positions {@code [0, known)}; -1 once a gap ended drafting. */
  private int known;

  /** Cache rows {@code [0, exact)} pair standing tokens with the target's hidden states. */
  private int exact;

  /**
   * A drafter over {@code head}, choosing tokens by {@code rule}.
   *
   * @param head the target's MTP layer or an EAGLE-3 head over the target
   * @param rule the request's sampling rule over the target's vocabulary
   */
  public HiddenStateDrafter(DraftHead head, RowDistribution rule) {
    this.layer = head;
    this.rule = rule;
    this.width = head.targetWidth();
    this.chainWidth = head.chainWidth();
    this.cache = head.newCache();
  }

  /** The head's cache (for tests of the rollback). */
  KvCache cache() {
    return cache;
  }

  @Override
  public boolean needsHidden() {
    return true;
  }

  @Override
  public HiddenCapture hiddenCapture() {
    return layer.capture();
  }

  @Override
  public void observeHidden(int start, float[] rows, int offset, int count) {
    if (start > known) {
      throw new IllegalArgumentException(
          "hidden states from position "
              + start
              + " leave a gap: positions below "
              + known
              + " seen");
    }
    int end = start + count;
    if (end * width > hidden.length) {
      hidden = Arrays.copyOf(hidden, Math.max(hidden.length * 2, end * width));
    }
    System.arraycopy(rows, offset * width, hidden, start * width, count * width);
    known = end;
    // Cache rows at or after start were fed older hidden states: they no longer stand.
    exact = Math.min(exact, start);
  }

  @Override
  public Draft propose(int[] context, int length, int k) {
    // Row j needs hidden state j and token j + 1: rows up to length - 2 can be fed.
    int rows = length - 1;
    if (rows < 1 || known < rows) {
      return Draft.EMPTY;
    }
    // The newest row is refed when nothing is new: its logits give the first draft token.
    int from = Math.min(exact, rows - 1);
    cache.setLength(from);
    int[] tokens = Arrays.copyOfRange(context, from + 1, length);
    HiddenLogits out =
        layer.forward(tokens, Arrays.copyOfRange(hidden, from * width, rows * width), cache);
    exact = rows;
    int[] draft = new int[k];
    double[][] probs = rule.greedy() ? null : new double[k][];
    long seed = rule.seed() ^ DRAFT_SEED_SALT;
    for (int i = 0; i < k; i++) {
      float[] logits = out.logits();
      if (probs == null) {
        draft[i] = rule.argmax(logits, 0);
      } else {
        probs[i] = rule.probabilities(logits, 0);
        draft[i] = RowDistribution.draw(probs[i], Philox.uniform(seed, length + i, ROUND_DRAFT));
      }
      if (i + 1 < k) {
        int last = out.hidden().length / chainWidth - 1;
        out =
            layer.chain(
                new int[] {draft[i]},
                Arrays.copyOfRange(out.hidden(), last * chainWidth, (last + 1) * chainWidth),
                cache);
      }
    }
    return new Draft(draft, probs);
  }

  @Override
  public void close() {
    cache.close();
  }
}
