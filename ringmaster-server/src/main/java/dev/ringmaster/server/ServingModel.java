package dev.ringmaster.server;

import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.constraint.ConstraintCompiler;
import dev.ringmaster.engine.constraint.TokenVocabulary;
import dev.ringmaster.model.tokenizer.Tokenizer;

/**
 * The model a server serves: its public name, tokenizer and engine.
 *
 * @param name the model id clients send and {@code /v1/models} lists
 * @param path where it was loaded from (shown in server info)
 * @param tokenizer its tokenizer
 * @param engine the engine that runs it
 * @param constraints compiles output constraints (regex, choice, JSON schema) for its vocabulary
 */
public record ServingModel(
    String name,
    String path,
    Tokenizer tokenizer,
    BatchEngine engine,
    ConstraintCompiler constraints) {

  /** A served model whose constraint compiler is built from its tokenizer's vocabulary. */
  public ServingModel(String name, String path, Tokenizer tokenizer, BatchEngine engine) {
    this(
        name,
        path,
        tokenizer,
        engine,
        new ConstraintCompiler(
            TokenVocabulary.of(
                tokenizer, engine.model().config().vocabSize(), eosIds(tokenizer, engine))));
  }

  private static int[] eosIds(Tokenizer tokenizer, BatchEngine engine) {
    int[] ids = tokenizer.eosIds();
    if (ids.length > 0) {
      return ids;
    }
    return engine.model().config().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
  }

  /** End-of-sequence ids: the tokenizer's, else the model config's. */
  public int[] eosIds() {
    return eosIds(tokenizer, engine);
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
