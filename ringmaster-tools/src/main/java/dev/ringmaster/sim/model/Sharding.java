package dev.ringmaster.sim.model;

/**
 * How a model is divided among ranks: tensor parallel degree and expert parallel degree. Experts
 * are divided into {@code ep} groups of whole experts, each expert split {@code tp / ep} ways by
 * its intermediate size (SGLang's {@code moe_tp_size = tp / ep}).
 *
 * @param tp tensor-parallel ranks
 * @param ep expert-parallel ranks (1 = experts split by TP only)
 */
public record Sharding(int tp, int ep) {

  /** Validates the degrees. */
  public Sharding {
    if (tp < 1 || ep < 1 || tp % ep != 0) {
      throw new IllegalArgumentException(
          "tp (" + tp + ") and ep (" + ep + ") must be positive with ep dividing tp");
    }
  }

  /** Tensor-parallel degree inside one expert. */
  public int expertTp() {
    return tp / ep;
  }

  /** Fraction of a weight of this split one rank holds (experts: of one expert). */
  public double fraction(Split split) {
    return switch (split) {
      case REPLICATED -> 1.0;
      case COLUMN, ROW, VOCAB -> 1.0 / tp;
      case EXPERT -> 1.0 / expertTp();
    };
  }
}
