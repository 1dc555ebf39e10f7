package dev.ringmaster.sim.model;

/**
 * One weight of the checkpoint, or {@code count} identical ones (the routed experts of a layer).
 *
 * @param name checkpoint-style name (for reports)
 * @param rows output features (1 for vectors)
 * @param cols input features
 * @param count identical copies (routed experts), otherwise 1
 * @param role what it does
 * @param split how ranks divide it
 */
public record Weight(String name, long rows, long cols, int count, Role role, Split split) {

  /** Parameters of all copies. */
  public long parameters() {
    return rows * cols * count;
  }

  /** Bytes of all copies in the scheme's format for this role. */
  public double bytes(QuantScheme q) {
    if (rows == 1 || role == Role.NORM) {
      return 2.0 * rows * cols * count;
    }
    return q.formatOf(role).matrixBytes(rows, cols) * count;
  }
}
