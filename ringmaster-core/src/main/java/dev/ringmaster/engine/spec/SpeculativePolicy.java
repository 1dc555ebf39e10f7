package dev.ringmaster.engine.spec;

import java.util.Arrays;
import java.util.Locale;

/** When the batch engine speculates ({@code --speculative-policy}). */
public enum SpeculativePolicy {
  /**
   * Each step, draft only where the expected accepted tokens per unit time, from measured decode
   * and verify costs and the acceptance seen so far, beat plain decoding by a margin.
   */
  AUTO,
  /** Draft for every eligible request at every decode step. */
  ALWAYS;

  /** The policy named {@code name} (any case), or an error listing the known names. */
  public static SpeculativePolicy parse(String name) {
    try {
      return valueOf(name.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown speculative policy '"
              + name
              + "': use one of "
              + Arrays.toString(values()).toLowerCase(Locale.ROOT),
          e);
    }
  }
}
