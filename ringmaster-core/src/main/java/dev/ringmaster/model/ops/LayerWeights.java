package dev.ringmaster.model.ops;

/**
 * One decoder layer's weights.
 *
 * @param inputNorm input_layernorm weight
 * @param attention the attention block's weights
 * @param postAttentionNorm post_attention_layernorm weight
 * @param feedForward dense MLP or mixture of experts
 * @param <T> the backend's weight handle
 */
public record LayerWeights<T>(
    T inputNorm,
    AttentionWeights<T> attention,
    T postAttentionNorm,
    FeedForwardWeights<T> feedForward) {}
