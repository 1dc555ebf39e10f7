package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.constraint.ConstraintState;

/**
 * A generation request for the batch engine.
 *
 * @param id caller's id, for logs
 * @param promptIds prompt token ids (at least one, each inside the vocabulary)
 * @param params sampling and stopping; {@code maxNewTokens} at least 1
 * @param eosIds end-of-sequence tokens (ignored with {@code params.ignoreEos()})
 * @param topLogprobs -1 for no logprobs, 0 for the chosen token's only, k for also the k most
 *     likely tokens
 * @param listener receives tokens and the outcome on the engine thread
 * @param constraint the request's output constraint (a fresh state), or null for none: each token
 *     is chosen among those it allows, and the request ends when it is complete
 */
public record EngineRequest(
    String id,
    int[] promptIds,
    SamplingParams params,
    int[] eosIds,
    int topLogprobs,
    TokenListener listener,
    ConstraintState constraint) {

  /** A request without an output constraint. */
  public EngineRequest(
      String id,
      int[] promptIds,
      SamplingParams params,
      int[] eosIds,
      int topLogprobs,
      TokenListener listener) {
    this(id, promptIds, params, eosIds, topLogprobs, listener, null);
  }
}
