package dev.ringmaster.model.arch;

import java.util.Arrays;

/**
 * Which rank owns each routed expert under expert parallelism, and where among that rank's experts
 * it sits. The default splits the experts into contiguous ranges; any table can be given (for
 * example one that balances measured expert load), as long as every rank owns at least one expert.
 */
public final class ExpertPlacement {
  private final int[] owner;
  private final int[] localIndex;
  private final int[][] byRank;

  private ExpertPlacement(int[] owner, int ranks) {
    this.owner = owner.clone();
    this.localIndex = new int[owner.length];
    int[] counts = new int[ranks];
    for (int e = 0; e < owner.length; e++) {
      int r = owner[e];
      if (r < 0 || r >= ranks) {
        throw new IllegalArgumentException(
            "expert placement: expert " + e + " is placed on rank " + r + " of " + ranks);
      }
      localIndex[e] = counts[r]++;
    }
    this.byRank = new int[ranks][];
    for (int r = 0; r < ranks; r++) {
      if (counts[r] == 0) {
        throw new IllegalArgumentException("expert placement: rank " + r + " owns no expert");
      }
      byRank[r] = new int[counts[r]];
    }
    for (int e = 0; e < owner.length; e++) {
      byRank[owner[e]][localIndex[e]] = e;
    }
  }

  /** Experts {@code [r*E/n, (r+1)*E/n)} on rank {@code r}. */
  public static ExpertPlacement contiguous(int experts, int ranks) {
    if (experts % ranks != 0) {
      throw new IllegalArgumentException(
          "n_routed_experts (" + experts + ") is not divisible by --ep-size " + ranks);
    }
    int[] owner = new int[experts];
    for (int e = 0; e < experts; e++) {
      owner[e] = e / (experts / ranks);
    }
    return new ExpertPlacement(owner, ranks);
  }

  /** An explicit table: {@code owner[e]} is the rank of expert {@code e}. */
  public static ExpertPlacement of(int[] owner, int ranks) {
    return new ExpertPlacement(owner, ranks);
  }

  /** Number of routed experts. */
  public int experts() {
    return owner.length;
  }

  /** The rank owning expert {@code e}. */
  public int owner(int e) {
    return owner[e];
  }

  /** Position of expert {@code e} among its owner's experts. */
  public int localIndex(int e) {
    return localIndex[e];
  }

  /** The experts rank {@code r} owns, in local order. */
  public int[] expertsOf(int r) {
    return byRank[r].clone();
  }

  @Override
  public String toString() {
    return "ExpertPlacement" + Arrays.toString(owner);
  }
}
