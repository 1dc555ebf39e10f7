package dev.ringmaster.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * Reads the reference outputs committed beside the fixtures. They are gzip-compressed JSON ({@code
 * reference.json.gz}): the logits are long lists of decimals that compress about three times, and
 * the repository has a size budget.
 */
public final class ReferenceJson {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ReferenceJson() {}

  /** The parsed contents of a {@code .json.gz} (or plain {@code .json}) file. */
  public static JsonNode read(Path file) {
    try (InputStream raw = Files.newInputStream(file);
        InputStream in = file.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw) {
      return JSON.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read reference " + file, e);
    }
  }

  /** The reference of a fixture directory: its {@code reference.json.gz}. */
  public static JsonNode ofFixture(Path dir) {
    return read(dir.resolve("reference.json.gz"));
  }
}
