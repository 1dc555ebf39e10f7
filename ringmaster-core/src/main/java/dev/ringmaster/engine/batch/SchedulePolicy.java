package dev.ringmaster.engine.batch;

import java.util.Locale;

/** The order in which waiting requests are admitted (SGLang's {@code --schedule-policy}). */
public enum SchedulePolicy {
  /** First come, first served. */
  FCFS,
  /**
   * Longest prefix match first: the waiting requests with most cached prefix pages go first, so
   * requests that share a prefix run together while it is cached; a request passed over {@link
   * #LPM_STARVATION_BOUND} times goes ahead of every other.
   */
  LPM;

  /** How many later requests may be admitted before a waiting one under {@link #LPM}. */
  public static final int LPM_STARVATION_BOUND = 32;

  /** The flag's spelling. */
  public String flagName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses {@code fcfs} or {@code lpm}. */
  public static SchedulePolicy parse(String s) {
    for (SchedulePolicy p : values()) {
      if (p.flagName().equals(s)) {
        return p;
      }
    }
    throw new IllegalArgumentException("--schedule-policy must be fcfs or lpm, got '" + s + "'");
  }
}
