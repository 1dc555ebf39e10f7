package dev.ringmaster.tools.tune;

import java.util.OptionalDouble;

/** Predicts a point's objective before it runs, for {@code --simulate-first}. */
public interface TrialPredictor {
  /**
   * The predicted value of the tune's objective for {@code trial} (better in the objective's
   * direction), or empty when it cannot be predicted.
   */
  OptionalDouble predict(TuneConfig config, Trial trial);

  /** What the predictions come from, for the report (e.g. the simulator on a profile). */
  String describe();
}
