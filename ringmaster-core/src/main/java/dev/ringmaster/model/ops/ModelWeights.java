package dev.ringmaster.model.ops;

import java.util.List;

/**
 * A whole model's weights as one rank holds them.
 *
 * @param embed embedding rows (this rank's vocabulary slice)
 * @param layers the decoder layers in order
 * @param finalNorm the final norm's weight
 * @param lmHead the LM head (this rank's vocabulary slice; may be {@code embed} when tied)
 * @param <T> the backend's weight handle
 */
public record ModelWeights<T>(T embed, List<LayerWeights<T>> layers, T finalNorm, T lmHead) {}
