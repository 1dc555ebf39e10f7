package dev.ringmaster.tools.tune;

import java.util.Optional;

/** A check that can rule a point of the grid out before it runs. */
public interface PointCheck {
  /** The cause recorded for the points it rules out ({@code doctor}, {@code does not run}). */
  String cause();

  /** Why {@code trial} cannot run here, or empty when it may. */
  Optional<String> reject(TuneConfig config, Trial trial);
}
