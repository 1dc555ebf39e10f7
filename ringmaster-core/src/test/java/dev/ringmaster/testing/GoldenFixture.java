package dev.ringmaster.testing;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * A golden fixture: a tiny model directory with reference outputs recorded from Hugging Face
 * transformers by {@code scripts/make_fixtures.py}.
 *
 * @param name fixture name
 * @param dir model directory
 * @param promptIds prompt token ids
 * @param logits reference logits at every prompt position, {@code [len][vocab]}
 * @param greedyIds greedy continuation
 */
public record GoldenFixture(
    String name, Path dir, int[] promptIds, float[][] logits, int[] greedyIds) {

  /** All fixtures under {@code fixtures/golden}. */
  public static List<GoldenFixture> all() {
    Path root = RepoPaths.require("fixtures/golden");
    try (Stream<Path> dirs = Files.list(root)) {
      List<GoldenFixture> list =
          dirs.filter(d -> Files.exists(d.resolve("reference.json.gz")))
              .sorted()
              .map(GoldenFixture::load)
              .toList();
      if (list.isEmpty()) {
        throw new IllegalStateException("no fixtures with reference.json.gz under " + root);
      }
      return list;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Loads one fixture directory. */
  public static GoldenFixture load(Path dir) {
    {
      JsonNode ref = ReferenceJson.ofFixture(dir);
      int[] prompt = ints(ref.get("prompt_ids"));
      JsonNode lg = ref.get("logits");
      float[][] logits = new float[lg.size()][];
      for (int i = 0; i < lg.size(); i++) {
        JsonNode row = lg.get(i);
        logits[i] = new float[row.size()];
        for (int j = 0; j < row.size(); j++) {
          logits[i][j] = (float) row.get(j).asDouble();
        }
      }
      return new GoldenFixture(
          dir.getFileName().toString(), dir, prompt, logits, ints(ref.get("greedy_ids")));
    }
  }

  private static int[] ints(JsonNode n) {
    int[] out = new int[n.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = n.get(i).asInt();
    }
    return out;
  }

  @Override
  public String toString() {
    return name;
  }
}
