package dev.ringmaster.sim.calibrate;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The measurement files under {@code src/test/resources/calibrate} (their README says what each
 * is).
 */
final class CalibrationFixtures {
  private CalibrationFixtures() {}

  /** One fixture, parsed as {@code simulate calibrate} reads it. */
  static MeasurementFile file(String name) throws Exception {
    try (var in = CalibrationFixtures.class.getResourceAsStream("/calibrate/" + name)) {
      return MeasurementsIo.parseAny(
          new String(Objects.requireNonNull(in, name).readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  /** {@code first} (unless null) and then {@code more}, in order. */
  static List<MeasurementFile> files(String first, List<String> more) throws Exception {
    List<MeasurementFile> out = new ArrayList<>();
    if (first != null) {
      out.add(file(first));
    }
    for (String name : more) {
      out.add(file(name));
    }
    return out;
  }
}
