package dev.ringmaster.sim.model;

/** Breakdown terms of a step's time. */
public enum Category {
  /**
   * Streaming non-expert weights: attention projections, indexer, dense MLP, shared experts, head.
   */
  WEIGHTS("weights"),
  /** Attention over the KV cache, the DSA indexer's scoring, cache writes. */
  ATTENTION("attention"),
  /** Routed experts. */
  MOE("moe"),
  /**
   * Decode time per token per layer that the roofline does not explain: kernels that are latency-
   * bound per sequence (attention) or process tokens in passes (expert kernels) grow with the batch
   * faster than their bytes. Zero until a profile is calibrated from decode steps of several batch
   * sizes.
   */
  TOKEN_LATENCY("token_latency"),
  /** Collectives between ranks. */
  COLLECTIVES("collectives"),
  /** Kernel launches, graph replay, host-side step overhead. */
  LAUNCH_OTHER("launch_other");

  private final String key;

  Category(String key) {
    this.key = key;
  }

  /** JSON / table key. */
  public String key() {
    return key;
  }
}
