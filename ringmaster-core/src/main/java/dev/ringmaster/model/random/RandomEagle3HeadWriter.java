package dev.ringmaster.model.random;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.DType;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.eagle.Eagle3HeadConfig;
import dev.ringmaster.model.eagle.Eagle3Tensors;
import dev.ringmaster.model.weights.SafetensorsWriter;
import dev.ringmaster.model.weights.TensorSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes a random-weight EAGLE-3 head ({@code LlamaForCausalLMEagle3} layout) for a target model:
 * as wide as the target, 4 query heads over 2 KV heads, an MLP twice as wide, and a draft
 * vocabulary of {@code draftVocab} target tokens spread evenly over the target's ({@code d2t} holds
 * their offsets). For tests and for trying the EAGLE3 path on a model without a trained head.
 */
public final class RandomEagle3HeadWriter {
  private RandomEagle3HeadWriter() {}

  /**
   * The head's {@code config.json} for {@code target}.
   *
   * @param auxLayerIds {@code eagle_config.eagle_aux_hidden_state_layer_ids}, or null for the
   *     default capture
   */
  public static ObjectNode config(ModelConfig target, int draftVocab, List<Integer> auxLayerIds) {
    ObjectNode c = new ObjectMapper().createObjectNode();
    c.putArray("architectures").add(Eagle3HeadConfig.ARCHITECTURE);
    c.put("model_type", "llama");
    int h = target.hiddenSize();
    c.put("hidden_size", h);
    c.put("intermediate_size", 2 * h);
    c.put("num_attention_heads", 4);
    c.put("num_key_value_heads", 2);
    c.put("head_dim", h / 4);
    c.put("num_hidden_layers", 1);
    c.put("hidden_act", "silu");
    c.put("rms_norm_eps", target.rmsNormEps());
    c.put("rope_theta", 10000.0);
    c.put("max_position_embeddings", target.maxPositionEmbeddings());
    c.put("vocab_size", target.vocabSize());
    c.put("draft_vocab_size", draftVocab);
    c.put("tie_word_embeddings", false);
    c.put("initializer_range", 0.05);
    if (auxLayerIds != null) {
      var ids = c.putObject("eagle_config").putArray("eagle_aux_hidden_state_layer_ids");
      auxLayerIds.forEach(ids::add);
    }
    return c;
  }

  /** The target ids of the draft vocabulary {@link #write} gives a head: spread evenly. */
  public static int[] hotTokenIds(int vocab, int draftVocab) {
    int[] ids = new int[draftVocab];
    for (int i = 0; i < draftVocab; i++) {
      ids[i] = (int) ((long) i * vocab / draftVocab);
    }
    return ids;
  }

  /**
   * Writes {@code config} as {@code outDir/config.json} and random weights for it as {@code
   * outDir/model.safetensors}, with {@link #hotTokenIds} as the draft vocabulary.
   */
  public static void write(ObjectNode config, Path outDir, DType dtype, long seed)
      throws IOException {
    Eagle3HeadConfig cfg = Eagle3HeadConfig.of(config, outDir.resolve("config.json").toString());
    int[] hot = hotTokenIds(cfg.vocabSize(), cfg.draftVocabSize());
    long[] d2t = new long[hot.length];
    for (int i = 0; i < hot.length; i++) {
      d2t[i] = hot[i] - i;
    }
    write(config, outDir, Eagle3Tensors.specs(cfg, dtype), d2t, seed);
  }

  /**
   * Writes {@code config} and the tensors {@code specs} (random where they are floating, {@code
   * d2t} from {@code d2t}, as many entries as its spec has), whatever their shapes: also a way to
   * write a malformed head.
   */
  public static void write(
      ObjectNode config, Path outDir, List<TensorSpec> specs, long[] d2t, long seed)
      throws IOException {
    Files.createDirectories(outDir);
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    json.writeValue(outDir.resolve("config.json").toFile(), config);
    double std = config.path("initializer_range").asDouble(0.02);
    SafetensorsWriter.write(
        outDir.resolve("model.safetensors"),
        specs,
        (s, off, buf) -> {
          if (s.dtype() == DType.I64) {
            int pos = buf.position();
            int n = buf.remaining() / 8;
            for (int i = 0; i < n; i++) {
              int d = (int) (off / 8) + i;
              buf.putLong(pos + i * 8, d < d2t.length ? d2t[d] : 0);
            }
          } else {
            RandomModelWriter.fill(s, off, buf, seed, std);
          }
        },
        b -> {});
  }
}
