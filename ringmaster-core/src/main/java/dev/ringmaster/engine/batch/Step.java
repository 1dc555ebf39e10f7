package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.util.List;

/**
 * One forward step: the sequences in it, how many of their pending tokens each contributes, and
 * which of them sample a token afterwards (those whose pending tokens are all consumed).
 */
record Step(List<Sequence> seqs, int[] counts, boolean[] samples) {

  int numTokens() {
    int n = 0;
    for (int c : counts) {
      n += c;
    }
    return n;
  }

  /** The forward inputs of sequences {@code [from, to)} of this step. */
  Inputs inputs(int from, int to) {
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
      rows += samples[i] ? 1 : 0;
    }
    int[] logitRows = new int[rows];
    int t = 0;
    int r = 0;
    for (int i = from; i < to; i++) {
      Sequence s = seqs.get(i);
      seqStart[i - from] = t;
      caches[i - from] = s.cache;
      int start = s.cached();
      for (int k = 0; k < counts[i]; k++) {
        tokens[t] = s.token(start + k);
        positions[t] = start + k;
        t++;
      }
      if (samples[i]) {
        logitRows[r++] = t - 1;
      }
    }
    seqStart[to - from] = t;
    return new Inputs(tokens, new BatchLayout(seqStart, positions), caches, logitRows);
  }

  /** Arguments of one {@link dev.ringmaster.runtime.LanguageModel#forward} call. */
  record Inputs(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {}
}
