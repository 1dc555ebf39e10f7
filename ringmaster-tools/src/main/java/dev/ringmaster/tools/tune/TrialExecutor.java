package dev.ringmaster.tools.tune;

/** Runs one trial in isolation and records how it ended; it never throws for a failed trial. */
public interface TrialExecutor {
  /** Runs {@code trial}: a measurement or a failure with its cause. */
  TrialResult run(Trial trial) throws InterruptedException;

  /** The executor of a tune's mode: a {@code serve} child or a {@code bench one-batch} child. */
  static TrialExecutor of(TuneConfig config) {
    return config.isOneBatch() ? new OneBatchRunner(config) : new TrialRunner(config);
  }
}
