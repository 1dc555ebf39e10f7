package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.SamplingParams;

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
 */
public record EngineRequest(
    String id,
    int[] promptIds,
    SamplingParams params,
    int[] eosIds,
    int topLogprobs,
    TokenListener listener) {}
