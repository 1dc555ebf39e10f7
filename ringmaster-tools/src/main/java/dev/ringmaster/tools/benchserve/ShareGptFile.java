package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A ShareGPT-format JSON file: a list of {@code {"conversations": [{"from": ..., "value": ...},
 * ...]}} (or {@code "conversation"}), of which each entry's first two turns are a prompt and its
 * reply.
 */
final class ShareGptFile {
  private ShareGptFile() {}

  /** A prompt and the reply that followed it. */
  record Pair(String prompt, String completion) {}

  /**
   * The first two turns of every conversation that has at least two, in file order.
   *
   * @throws BenchServeException when the file is missing, not JSON, or not of this shape
   */
  static List<Pair> read(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new BenchServeException(
          "--dataset-path " + file + ": file not found (expected a ShareGPT-format JSON file)");
    }
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(file.toFile());
    } catch (IOException e) {
      throw new BenchServeException(
          "--dataset-path "
              + file
              + ": not valid JSON ("
              + e.getMessage().lines().findFirst().orElse("")
              + ")",
          e);
    }
    if (root == null || !root.isArray()) {
      throw new BenchServeException(
          "--dataset-path "
              + file
              + ": expected a JSON list of {\"conversations\": [{\"from\": ..., \"value\": ...}]}");
    }
    List<Pair> out = new ArrayList<>();
    for (JsonNode entry : root) {
      JsonNode turns =
          entry.has("conversations") ? entry.get("conversations") : entry.get("conversation");
      if (turns == null || !turns.isArray() || turns.size() < 2) {
        continue;
      }
      out.add(
          new Pair(turns.get(0).path("value").asText(""), turns.get(1).path("value").asText("")));
    }
    return out;
  }
}
