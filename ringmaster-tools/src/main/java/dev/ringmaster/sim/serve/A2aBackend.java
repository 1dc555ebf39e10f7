package dev.ringmaster.sim.serve;

/** How MoE tokens reach expert-parallel ranks ({@code --moe-a2a-backend}). */
public enum A2aBackend {
  /** Every rank sees every token; expert outputs are summed by the layer's allreduce. */
  NONE("none"),
  /** Tokens are dispatched to and combined from the experts' ranks by all-to-all. */
  ALL_TO_ALL("all-to-all");

  private final String cliName;

  A2aBackend(String cliName) {
    this.cliName = cliName;
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
    throw new IllegalArgumentException("unknown a2a backend '" + name + "' (none, all-to-all)");
  }
}
