package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.spec.Draft;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.List;

/**
 * One forward step: the sequences in it, where each starts in its cache, how many of its pending
 * tokens each contributes, and which of them sample a token afterwards (those whose pending tokens
 * are all consumed).
 *
 * <p>A step planned while the previous one still runs holds a placeholder for each token that step
 * is sampling; {@link #fillDeferred} writes those token ids once they are known, so the rest of the
 * inputs is built while the model is busy.
 *
 * <p>A decode row may carry a draft ({@link #draft}): it then runs its last token and the draft
 * tokens, which follow the sequence's known tokens, and asks for logits of every one of them.
 */
final class Step {
  private final List<Sequence> seqs;
  private final int[] counts;
  private final int[] starts;
  private final boolean[] samples;
  private final Draft[] drafts;
  private final Inputs all;
  private final int[] deferredAt;
  private final int[] deferredSeq;

  Step(List<Sequence> seqs, int[] counts, int[] starts, boolean[] samples) {
    this(seqs, counts, starts, samples, null);
  }

  /**
   * A step whose rows may carry drafts ({@code drafts[i]} null for none); a row with a draft of
   * {@code k} tokens counts its last token and the {@code k} drafts.
   */
  Step(List<Sequence> seqs, int[] counts, int[] starts, boolean[] samples, Draft[] drafts) {
    this.seqs = List.copyOf(seqs);
    this.counts = counts;
    this.starts = starts;
    this.samples = samples;
    this.drafts = drafts;
    int deferred = 0;
    for (int i = 0; i < counts.length; i++) {
      if (starts[i] + counts[i] - draftLength(i) > seqs.get(i).length()) {
        deferred++;
      }
    }
    this.deferredAt = new int[deferred];
    this.deferredSeq = new int[deferred];
    this.all = build(0, seqs.size(), true);
  }

  List<Sequence> seqs() {
    return seqs;
  }

  int[] counts() {
    return counts;
  }

  /** Cache length of each sequence before this step. */
  int[] starts() {
    return starts;
  }

  boolean[] samples() {
    return samples;
  }

  /** Row {@code i}'s draft, or null when it decodes plainly. */
  Draft draft(int i) {
    return drafts == null ? null : drafts[i];
  }

  private int draftLength(int i) {
    Draft d = draft(i);
    return d == null ? 0 : d.length();
  }

  /** Whether some row of {@code [from, to)} carries a draft. */
  boolean hasDrafts(int from, int to) {
    for (int i = from; i < to; i++) {
      if (draft(i) != null) {
        return true;
      }
    }
    return false;
  }

  /**
   * The logit rows (indices into {@link Inputs#logitRows}) of the rows of {@code [from, to)} that
   * sample plainly, in order: the rows a sampler handles, the drafts' rows left to the verifier.
   */
  int[] plainLogitRows(int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) {
      n += samples[i] && draft(i) == null ? 1 : 0;
    }
    int[] out = new int[n];
    int row = 0;
    int p = 0;
    for (int i = from; i < to; i++) {
      if (!samples[i]) {
        continue;
      }
      if (draft(i) == null) {
        out[p++] = row++;
      } else {
        row += counts[i];
      }
    }
    return out;
  }

  int numTokens() {
    int n = 0;
    for (int c : counts) {
      n += c;
    }
    return n;
  }

  /** Whether some token ids are still placeholders (see {@link #fillDeferred}). */
  boolean hasDeferred() {
    return deferredAt.length > 0;
  }

  /**
   * Whether this step, planned ahead, still fits its sequences: each still runs, was not cancelled,
   * and its cache and tokens are where the plan expected them.
   */
  boolean stillValid() {
    for (int i = 0; i < seqs.size(); i++) {
      Sequence s = seqs.get(i);
      if (s.finished
          || s.cache == null
          || s.handle.endRequested()
          || s.awaitingToken
          || s.planned != starts[i]
          || starts[i] + counts[i] - draftLength(i) > s.length()
          // jump-forward appended tokens after the one this row was to sample after
          || (samples[i] && starts[i] + counts[i] - draftLength(i) < s.length())) {
        return false;
      }
    }
    return true;
  }

  /** Writes the token ids that were not known when the step was planned. */
  void fillDeferred() {
    for (int d = 0; d < deferredAt.length; d++) {
      int t = deferredAt[d];
      all.tokens()[t] = seqs.get(deferredSeq[d]).token(all.layout().positions()[t]);
    }
  }

  /** The forward inputs of the whole step (placeholders filled by {@link #fillDeferred}). */
  Inputs inputs() {
    return all;
  }

  /** The forward inputs of sequences {@code [from, to)}, built from their tokens now. */
  Inputs inputs(int from, int to) {
    return from == 0 && to == seqs.size() && !hasDeferred() ? all : build(from, to, false);
  }

  private Inputs build(int from, int to, boolean recordDeferred) {
    int n = 0;
    for (int i = from; i < to; i++) {
      n += counts[i];
    }
    int[] tokens = new int[n];
    int[] positions = new int[n];
    int[] seqStart = new int[to - from + 1];
    KvCache[] caches = new KvCache[to - from];
    int rows = 0;
    for (int i = from; i < to; i++) {
      rows += !samples[i] ? 0 : draft(i) == null ? 1 : counts[i];
    }
    int[] logitRows = new int[rows];
    int t = 0;
    int r = 0;
    int d = 0;
    for (int i = from; i < to; i++) {
      Sequence s = seqs.get(i);
      seqStart[i - from] = t;
      caches[i - from] = s.cache;
      int start = starts[i];
      Draft draft = draft(i);
      for (int k = 0; k < counts[i]; k++) {
        int pos = start + k;
        if (pos < s.length()) {
          tokens[t] = s.token(pos);
        } else if (draft != null) {
          tokens[t] = draft.tokens()[pos - s.length()];
        } else if (recordDeferred) {
          deferredAt[d] = t;
          deferredSeq[d++] = i;
        } else {
          throw new IllegalStateException("token " + pos + " of a sequence is not known yet");
        }
        positions[t] = pos;
        if (draft != null) {
          logitRows[r++] = t; // a verify row: logits after its last token and every draft
        }
        t++;
      }
      if (samples[i] && draft == null) {
        logitRows[r++] = t - 1;
      }
    }
    seqStart[to - from] = t;
    return new Inputs(tokens, new BatchLayout(seqStart, positions), caches, logitRows);
  }

  /** Arguments of one {@link dev.ringmaster.runtime.LanguageModel#forward} call. */
  record Inputs(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {}
}
