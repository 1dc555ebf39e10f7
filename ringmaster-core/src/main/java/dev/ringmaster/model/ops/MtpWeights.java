package dev.ringmaster.model.ops;

/**
 * One multi-token-prediction (NEXTN) layer's weights, DeepSeek-V3 layout: the layer predicts the
 * token after next from the embedding of the next token and the target's final hidden state. The
 * embedding and the LM head are the main model's.
 *
 * @param enorm {@code enorm} weight, the norm of the next token's embedding
 * @param hnorm {@code hnorm} weight, the norm of the incoming hidden state
 * @param ehProj {@code eh_proj} {@code [hidden, 2 * hidden]} over {@code cat(enorm(e), hnorm(h))}
 * @param layer the full decoder layer that follows
 * @param sharedHeadNorm {@code shared_head.norm} weight, the norm before the LM head
 * @param <T> the backend's weight handle
 */
public record MtpWeights<T>(T enorm, T hnorm, T ehProj, LayerWeights<T> layer, T sharedHeadNorm) {}
