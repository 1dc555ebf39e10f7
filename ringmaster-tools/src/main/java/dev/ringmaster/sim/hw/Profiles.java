package dev.ringmaster.sim.hw;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Loads and saves hardware profiles: built-in ones by name, others from a JSON file. */
public final class Profiles {
  /** Names of the profiles shipped as resources. */
  public static final List<String> BUILT_IN =
      List.of("h200", "h200-x8", "h100-sxm-x8", "rtx-pro-6000-x8", "cpu-host");

  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private Profiles() {}

  /** A built-in profile by name, or a profile file by path. */
  public static HardwareProfile load(String nameOrFile) {
    if (BUILT_IN.contains(nameOrFile)) {
      try (InputStream in =
          Profiles.class.getResourceAsStream("/profiles/" + nameOrFile + ".json")) {
        if (in == null) {
          throw new IllegalStateException("built-in profile resource missing: " + nameOrFile);
        }
        return JSON.readValue(in, HardwareProfile.class);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read built-in profile " + nameOrFile, e);
      }
    }
    Path p = Path.of(nameOrFile);
    if (!Files.isRegularFile(p)) {
      throw new IllegalArgumentException(
          "hardware '"
              + nameOrFile
              + "' is neither a built-in profile "
              + BUILT_IN
              + " nor a file");
    }
    try {
      return JSON.readValue(p.toFile(), HardwareProfile.class);
    } catch (UnrecognizedPropertyException e) {
      throw new IllegalArgumentException(
          "profile "
              + p
              + ": unknown field \""
              + e.getPropertyName()
              + "\" at "
              + e.getPathReference()
              + "; known fields there: "
              + e.getKnownPropertyIds(),
          e);
    } catch (ValueInstantiationException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new IllegalArgumentException("profile " + p + ": " + cause.getMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read profile " + p + ": " + e.getMessage(), e);
    }
  }

  /** Writes a profile as JSON. */
  public static void save(HardwareProfile profile, Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    JSON.writeValue(file.toFile(), profile);
  }

  /** The profile as JSON text. */
  public static String toJson(HardwareProfile profile) {
    try {
      return JSON.writeValueAsString(profile);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
