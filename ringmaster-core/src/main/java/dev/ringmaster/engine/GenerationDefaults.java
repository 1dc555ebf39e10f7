package dev.ringmaster.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The model's own sampling defaults from {@code generation_config.json} (as SGLang and transformers
 * use them): temperature, top-p and top-k when {@code do_sample} is true, greedy otherwise. A
 * request's explicit values always win.
 *
 * @param temperature default temperature (0 = greedy)
 * @param topP default nucleus threshold
 * @param topK default top-k (0 = off)
 */
public record GenerationDefaults(double temperature, double topP, int topK) {
  /** Greedy decoding. */
  public static final GenerationDefaults GREEDY = new GenerationDefaults(0, 1, 0);

  /**
   * Reads the defaults of a model directory; greedy when the file is absent or says no sampling.
   */
  public static GenerationDefaults of(Path modelDir) {
    Path file = modelDir.resolve("generation_config.json");
    if (!Files.exists(file)) {
      return GREEDY;
    }
    try {
      JsonNode g = new ObjectMapper().readTree(Files.readString(file));
      if (!g.path("do_sample").asBoolean(false)) {
        return GREEDY;
      }
      return new GenerationDefaults(
          g.path("temperature").asDouble(1.0),
          g.path("top_p").asDouble(1.0),
          g.path("top_k").asInt(0));
    } catch (IOException e) {
      throw new IllegalArgumentException(file + ": not valid JSON (" + e.getMessage() + ")", e);
    }
  }
}
