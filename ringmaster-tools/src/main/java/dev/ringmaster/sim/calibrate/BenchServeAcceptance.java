package dev.ringmaster.sim.calibrate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The acceptance a served run measured, from {@code bench serve}'s JSON lines ({@code
 * --output-file}): the {@code accept_length} of the last line that has one (the server's {@code
 * avg_spec_accept_length}, bonus token included).
 */
public final class BenchServeAcceptance {
  private static final ObjectMapper JSON = new ObjectMapper();

  private BenchServeAcceptance() {}

  /** The accept length of the last result in {@code file} that reports one. */
  public static double acceptLength(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read bench serve results " + file, e);
    }
    Double found = null;
    int lineNo = 0;
    for (String line : lines) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      JsonNode n;
      try {
        n = JSON.readTree(line);
      } catch (IOException e) {
        throw new IllegalArgumentException(
            file
                + " line "
                + lineNo
                + " is not JSON: expected one bench serve result per line (bench serve"
                + " --output-file)");
      }
      JsonNode a = n.path("accept_length");
      if (a.isNumber()) {
        found = a.asDouble();
      }
    }
    if (found == null) {
      throw new IllegalArgumentException(
          file
              + " has no bench serve result with an accept_length: run bench serve against a"
              + " server with speculative decoding on, or give --speculative-accept-length");
    }
    return found;
  }
}
