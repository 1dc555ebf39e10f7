package dev.ringmaster.parallel;

/**
 * The rule {@link AllReduceAlgorithm#AUTO} uses: one-shot up to {@code oneShotMaxBytes}, two-shot
 * up to {@code twoShotMaxBytes}, ring above. The thresholds are meant to come from measurements on
 * the host (see the collective benchmark); {@link #defaults()} is only a starting point.
 *
 * @param oneShotMaxBytes largest message (inclusive) that uses one-shot
 * @param twoShotMaxBytes largest message (inclusive) that uses two-shot; at least {@code
 *     oneShotMaxBytes}
 */
public record AllReduceTable(long oneShotMaxBytes, long twoShotMaxBytes) {

  /** Validates the thresholds. */
  public AllReduceTable {
    if (oneShotMaxBytes < 0 || twoShotMaxBytes < oneShotMaxBytes) {
      throw new IllegalArgumentException(
          "need 0 <= oneShotMaxBytes <= twoShotMaxBytes, got "
              + oneShotMaxBytes
              + ", "
              + twoShotMaxBytes);
    }
  }

  /** One-shot up to 64 KiB, two-shot up to 1 MiB, ring above. */
  public static AllReduceTable defaults() {
    return new AllReduceTable(64 << 10, 1 << 20);
  }

  /** The concrete algorithm for a message of {@code bytes} bytes; never {@code AUTO}. */
  public AllReduceAlgorithm select(long bytes) {
    if (bytes <= oneShotMaxBytes) {
      return AllReduceAlgorithm.ONESHOT;
    }
    return bytes <= twoShotMaxBytes ? AllReduceAlgorithm.TWOSHOT : AllReduceAlgorithm.RING;
  }
}
