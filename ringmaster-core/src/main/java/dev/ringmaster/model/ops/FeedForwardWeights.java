package dev.ringmaster.model.ops;

/**
 * One layer's feed-forward weights, as this rank holds them.
 *
 * @param <T> the backend's weight handle
 */
public sealed interface FeedForwardWeights<T> {
  /**
   * A SwiGLU MLP: {@code gateUp} is the gate and up projections as one handle (the backend lays
   * them out together, {@link WeightSource#gateUp}), {@code down} the down projection.
   */
  record Dense<T>(T gateUp, T down) implements FeedForwardWeights<T> {}

  /**
   * A mixture of experts.
   *
   * @param router router weight {@code [experts, hidden]}
   * @param scoreBias e_score_correction_bias, or null
   * @param experts this rank's routed experts ({@link WeightSource#experts})
   * @param shared the shared experts as one MLP, or null
   */
  record Moe<T>(T router, T scoreBias, T experts, Dense<T> shared)
      implements FeedForwardWeights<T> {}
}
