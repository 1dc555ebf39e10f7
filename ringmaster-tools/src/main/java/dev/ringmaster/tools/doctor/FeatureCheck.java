package dev.ringmaster.tools.doctor;

/**
 * The verdict on one feature.
 *
 * @param feature the feature's name, e.g. {@code cuda-graphs}, {@code allreduce-oneshot}
 * @param verdict the verdict
 * @param reason one line saying why
 */
public record FeatureCheck(String feature, Verdict verdict, String reason) {
  /** A check with a reason of one line. */
  public FeatureCheck {
    if (reason == null || reason.isBlank() || reason.contains("\n")) {
      throw new IllegalArgumentException("a verdict needs a one-line reason: " + feature);
    }
  }

  /** An {@code ok} check. */
  static FeatureCheck ok(String feature, String reason) {
    return new FeatureCheck(feature, Verdict.OK, reason);
  }

  /** An {@code unsupported (hardware)} check. */
  static FeatureCheck hardware(String feature, String reason) {
    return new FeatureCheck(feature, Verdict.UNSUPPORTED_HARDWARE, reason);
  }

  /** An {@code unsupported (software version)} check. */
  static FeatureCheck software(String feature, String reason) {
    return new FeatureCheck(feature, Verdict.UNSUPPORTED_SOFTWARE, reason);
  }

  /** An {@code untested} check. */
  static FeatureCheck untested(String feature, String reason) {
    return new FeatureCheck(feature, Verdict.UNTESTED, reason);
  }
}
