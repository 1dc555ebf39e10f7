package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.ModelConfig;

/**
 * A loaded language model that runs batched forward steps over sequences' caches: one rank ({@link
 * CausalLm}) or several tensor/expert-parallel ranks ({@link ParallelCausalLm}).
 */
public interface LanguageModel extends AutoCloseable {
  /** The model's configuration. */
  ModelConfig config();

  /** A new, empty cache for one sequence. */
  KvCache newCache();

  /** Bytes of weights read from the checkpoint (all ranks together). */
  long weightBytes();

  /**
   * Runs the new tokens of a batch of sequences, appending them to the caches, and returns logits
   * {@code [logitRows.length, vocab]}.
   */
  float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows);

  /** Prefill or extend one sequence and return the logits of every new token. */
  default float[] forwardAll(int[] tokens, KvCache cache) {
    BatchLayout layout = BatchLayout.single(tokens.length, cache.length());
    int[] rows = new int[tokens.length];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = i;
    }
    return forward(tokens, layout, new KvCache[] {cache}, rows);
  }

  @Override
  void close();
}
