package dev.ringmaster.sim.calibrate;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads and writes {@link Measurements} JSON (snake_case), and recognises the JSON Ringmaster's
 * benchmarks print so that it can be calibrated from without conversion by hand.
 */
public final class MeasurementsIo {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT)
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  // bench collectives serialises its records with Jackson's default (camelCase) names.
  private static final ObjectMapper CAMEL =
      new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

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

  /**
   * Parses any of the accepted formats: a JSON array is {@code bench collectives --json} output, an
   * object with {@code results} is {@code bench one-batch --json} output, any other object is the
   * native {@link Measurements} schema.
   */
  public static MeasurementFile parseAny(String json) {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
    }
    try {
      if (root != null && root.isArray()) {
        List<BenchmarkResult> r = List.of(CAMEL.treeToValue(root, BenchmarkResult[].class));
        return new MeasurementFile.Collectives(r);
      }
      if (root != null && root.isObject() && root.has("results")) {
        return JSON.treeToValue(root, MeasurementFile.OneBatch.class);
      }
      if (root != null && root.isObject()) {
        return new MeasurementFile.Native(JSON.treeToValue(root, Measurements.class));
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("not a measurement file: " + e.getMessage(), e);
    }
    throw new IllegalArgumentException(
        "not a measurement file: expected bench collectives, bench one-batch or measurement JSON");
  }

  /** Reads a file in any accepted format ({@link #parseAny}). */
  public static MeasurementFile readAny(Path file) {
    try {
      return parseAny(Files.readString(file));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
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
