package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * Request bodies as sglang.bench_serving sends them: greedy, {@code ignore_eos} unless disabled,
 * streamed unless disabled, then {@code --extra-request-body} merged in. OpenAI streams also ask
 * for a usage chunk ({@code stream_options.include_usage}), so the server counts the tokens.
 */
final class RequestBodies {
  static final ObjectMapper JSON = new ObjectMapper();

  private RequestBodies() {}

  /**
   * The body for one request.
   *
   * @param model the model name OpenAI bodies carry (the native API takes none)
   */
  static ObjectNode of(Backend backend, String model, DatasetRow row, BenchServeConfig.Load load) {
    boolean stream = !load.disableStream();
    boolean ignoreEos = !load.disableIgnoreEos();
    ObjectNode b = JSON.createObjectNode();
    switch (backend) {
      case NATIVE -> {
        if (row.ids() != null) {
          b.set("input_ids", ids(row.ids()));
        } else {
          b.put("text", row.text());
        }
        ObjectNode sp = b.putObject("sampling_params");
        sp.put("temperature", 0.0);
        sp.put("max_new_tokens", row.outputLen());
        sp.put("ignore_eos", ignoreEos);
        b.put("stream", stream);
      }
      case COMPLETIONS -> {
        b.put("model", model);
        if (row.ids() != null) {
          b.set("prompt", ids(row.ids()));
        } else {
          b.put("prompt", row.text());
        }
        b.put("temperature", 0.0);
        b.put("best_of", 1);
        b.put("max_tokens", row.outputLen());
        openAiTail(b, stream, ignoreEos);
      }
      case CHAT -> {
        b.put("model", model);
        ObjectNode m = b.putArray("messages").addObject();
        m.put("role", "user");
        m.put("content", row.text());
        b.put("temperature", 0.0);
        b.put("max_completion_tokens", row.outputLen());
        openAiTail(b, stream, ignoreEos);
      }
    }
    if (load.extraRequestBody() != null) {
      merge(b, load.extraRequestBody());
    }
    return b;
  }

  private static void openAiTail(ObjectNode b, boolean stream, boolean ignoreEos) {
    b.put("stream", stream);
    if (stream) {
      b.putObject("stream_options").put("include_usage", true);
    }
    b.put("ignore_eos", ignoreEos);
  }

  private static ArrayNode ids(int[] ids) {
    ArrayNode a = JSON.createArrayNode();
    for (int id : ids) {
      a.add(id);
    }
    return a;
  }

  /** Copies {@code extra} into {@code into}; where both hold an object, key by key. */
  static void merge(ObjectNode into, ObjectNode extra) {
    for (Map.Entry<String, JsonNode> e : extra.properties()) {
      JsonNode mine = into.get(e.getKey());
      if (mine instanceof ObjectNode o && e.getValue() instanceof ObjectNode x) {
        merge(o, x);
      } else {
        into.set(e.getKey(), e.getValue().deepCopy());
      }
    }
  }
}
