package dev.ringmaster.parallel;

import java.util.Objects;

/**
 * Splitting a range among ranks. The near-even split gives the first {@code total % parts} parts
 * one extra element, so sizes not divisible by the world size work everywhere.
 */
public final class Splits {
  private Splits() {}

  /** Size of part {@code i} of the near-even split of {@code total} into {@code parts}. */
  public static int evenCount(int total, int parts, int i) {
    return total / parts + (i < total % parts ? 1 : 0);
  }

  /** Start of part {@code i} of the near-even split of {@code total} into {@code parts}. */
  public static int evenOffset(int total, int parts, int i) {
    return i * (total / parts) + Math.min(i, total % parts);
  }

  /** The near-even split of {@code total} into {@code parts} as an array of counts. */
  public static int[] even(int total, int parts) {
    if (total < 0 || parts < 1) {
      throw new IllegalArgumentException("cannot split " + total + " into " + parts + " parts");
    }
    int[] counts = new int[parts];
    for (int i = 0; i < parts; i++) {
      counts[i] = evenCount(total, parts, i);
    }
    return counts;
  }

  /** Sum of counts, checking that none is negative. */
  public static int sum(int[] counts) {
    Objects.requireNonNull(counts, "counts");
    long total = 0;
    for (int c : counts) {
      if (c < 0) {
        throw new IllegalArgumentException("negative count " + c);
      }
      total += c;
    }
    return Math.toIntExact(total);
  }

  /** Sum of {@code counts[0, end)}: the offset of block {@code end} in a rank-ordered layout. */
  public static int prefix(int[] counts, int end) {
    int total = 0;
    for (int i = 0; i < end; i++) {
      total += counts[i];
    }
    return total;
  }
}
