package dev.ringmaster.sim.calibrate;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads and writes {@link Measurements} JSON (snake_case). */
public final class MeasurementsIo {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT)
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private MeasurementsIo() {}

  /** Parses measurement JSON text. */
  public static Measurements parse(String json) {
    try {
      return JSON.readValue(json, Measurements.class);
    } catch (IOException e) {
      throw new IllegalArgumentException("not a measurement file: " + e.getMessage(), e);
    }
  }

  /** Reads a measurement file. */
  public static Measurements read(Path file) {
    try {
      return parse(Files.readString(file));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  /** Measurements as JSON text. */
  public static String toJson(Measurements m) {
    try {
      return JSON.writeValueAsString(m);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
