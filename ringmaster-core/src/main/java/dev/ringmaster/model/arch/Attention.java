package dev.ringmaster.model.arch;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;

/** A self-attention block with its projections; reads and extends the sequences' caches. */
public interface Attention {
  /**
   * Computes attention output (after the output projection) for {@code layout.numTokens()} tokens.
   *
   * @param out output, {@code [tokens, hidden]}
   * @param x normalised input, {@code [tokens, hidden]}
   * @param layout which sequence and position each token has
   * @param caches the cache of each sequence in the batch (indexed like {@code layout})
   * @param layer this block's layer index in the caches
   */
  void forward(float[] out, float[] x, BatchLayout layout, KvCache[] caches, int layer);
}
