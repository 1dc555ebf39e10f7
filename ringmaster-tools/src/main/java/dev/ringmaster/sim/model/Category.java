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
