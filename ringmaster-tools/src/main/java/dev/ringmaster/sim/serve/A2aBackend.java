package dev.ringmaster.sim.serve;

/** How MoE tokens reach expert-parallel ranks ({@code --moe-a2a-backend}). */
public enum A2aBackend {
  /** Every rank sees every token; expert outputs are summed by the layer's allreduce. */
  NONE("none"),
  /**
   * Ringmaster's all-to-all (the engine's {@code ExpertAllToAll}): fixed f32 blocks sized for a
   * graph, every rank's slice of ceil(tokens / ep) tokens sent to every peer with its routing, topK
   * rows of expert outputs back per slice token, then an allgather of the slices.
   */
  ALL_TO_ALL("all-to-all"),
  /**
   * What-if, not in the engine: a DeepEP-style all-to-all (fp8 dispatch with per-128 scales, bf16
   * combine, each token sent only to the ranks of its experts), as SGLang's {@code deepep}.
   */
  DEEPEP("deepep"),
  /**
   * The DeepEP-style what-if in low-latency mode for every step, prefill chunks included: its
   * symmetric buffers ({@link MemoryPlanner#deepEpLowLatencyBytes}) are sized for the whole prefill
   * chunk per rank, as SGLang's {@code --deepep-mode low_latency} with the dispatch-token limit
   * raised to the chunk.
   */
  DEEPEP_LOW_LATENCY("deepep-low-latency");

  private final String cliName;

  A2aBackend(String cliName) {
    this.cliName = cliName;
  }

  /** Whether tokens travel to the experts' ranks (any backend but {@link #NONE}). */
  public boolean dispatches() {
    return this != NONE;
  }

  /** Whether this is one of the DeepEP-style what-ifs (not in the engine). */
  public boolean deepEp() {
    return this == DEEPEP || this == DEEPEP_LOW_LATENCY;
  }

  /** Name used on the command line. */
  public String cliName() {
    return cliName;
  }

  /** Parses a CLI name. */
  public static A2aBackend parse(String name) {
    for (A2aBackend b : values()) {
      if (b.cliName.equalsIgnoreCase(name)) {
        return b;
      }
    }
    throw new IllegalArgumentException(
        "unknown a2a backend '" + name + "' (none, all-to-all, deepep, deepep-low-latency)");
  }
}
