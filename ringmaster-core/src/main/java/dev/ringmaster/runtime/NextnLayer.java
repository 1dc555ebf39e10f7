package dev.ringmaster.runtime;

import dev.ringmaster.model.config.ModelConfig;

/**
 * A model's own multi-token-prediction layer (NEXTN / MTP, DeepSeek-V3 layout), run as a drafter:
 * for each new row it takes a token and the hidden state of the position before it (the target's
 * final hidden state, or this layer's own output when chained) and predicts the token after it,
 * through the target's embedding and LM head. It keeps its attention over earlier rows in a cache
 * of its own ({@link #newCache}, one layer), positioned as the hidden states' positions.
 */
public interface NextnLayer extends DraftHead {
  /** The target model's configuration (the layer's shape). */
  ModelConfig config();

  /** A new, empty one-layer cache for one sequence. */
  @Override
  KvCache newCache();

  /** The target's final hidden state after the final norm. */
  @Override
  default HiddenCapture capture() {
    return HiddenCapture.FINAL;
  }

  @Override
  default int targetWidth() {
    return config().hiddenSize();
  }

  @Override
  default int chainWidth() {
    return config().hiddenSize();
  }

  /** The MTP layer reads its own output as it reads the target's: the same step. */
  @Override
  default HiddenLogits chain(int[] tokens, float[] hidden, KvCache cache) {
    return forward(tokens, hidden, cache);
  }

  /**
   * Runs {@code tokens.length} rows appended to {@code cache}: row {@code i} is {@code
   * cat(enorm(embed(tokens[i])), hnorm(hidden[i]))} at position {@code cache.length() + i}.
   *
   * @param tokens the token of each row
   * @param hidden {@code [tokens.length, hidden_size]} the incoming hidden states
   * @param cache the sequence's cache, advanced past the new rows
   * @return the last row's logits and every row's output hidden state (after {@code
   *     shared_head.norm}), which feeds the next chained step
   */
  @Override
  HiddenLogits forward(int[] tokens, float[] hidden, KvCache cache);
}
