package dev.ringmaster.server;

import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.model.tokenizer.Tokenizer;

/**
 * The model a server serves: its public name, tokenizer and engine.
 *
 * @param name the model id clients send and {@code /v1/models} lists
 * @param path where it was loaded from (shown in server info)
 * @param tokenizer its tokenizer
 * @param engine the engine that runs it
 */
public record ServingModel(String name, String path, Tokenizer tokenizer, BatchEngine engine) {

  /** End-of-sequence ids: the tokenizer's, else the model config's. */
  public int[] eosIds() {
    int[] ids = tokenizer.eosIds();
    if (ids.length > 0) {
      return ids;
    }
    return engine.model().config().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
  }

  /** Vocabulary size of the model (valid token ids are below it). */
  public int vocabSize() {
    return engine.model().config().vocabSize();
  }

  /** Longest sequence (prompt plus output) the server accepts. */
  public int maxSequenceLength() {
    return engine.maxSequenceLength();
  }

  /** Whether a client-supplied model name refers to this model. */
  public boolean answersTo(String requested) {
    return requested == null || requested.isEmpty() || requested.equals(name);
  }
}
