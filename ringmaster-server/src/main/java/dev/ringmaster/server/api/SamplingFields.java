package dev.ringmaster.server.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.SamplingParams;
import java.util.HashMap;
import java.util.Map;

/**
 * The sampling fields both APIs share beyond temperature, top-p and top-k: {@code min_p}, {@code
 * repetition_penalty}, {@code frequency_penalty}, {@code presence_penalty} and {@code logit_bias},
 * checked with OpenAI's ranges and applied to {@link SamplingParams}.
 */
public final class SamplingFields {
  /** OpenAI's bound on a logit bias value. */
  static final double MAX_BIAS = 100;

  /** Most entries in one {@code logit_bias}. */
  static final int MAX_BIAS_ENTRIES = 1024;

  private SamplingFields() {}

  /**
   * Reads the fields from {@code o} and returns {@code base} with them.
   *
   * @param where how errors name the object ("" for the top level, "sampling_params." for the
   *     native API)
   * @param vocab vocabulary size (logit bias keys must be below it)
   */
  public static SamplingParams apply(ObjectNode o, String where, SamplingParams base, int vocab) {
    double minP = number(o, where, "min_p", 0, 0, 1);
    double repetition = number(o, where, "repetition_penalty", 1, 0, 2);
    if (repetition == 0) {
      throw ApiException.invalid(
          where + "repetition_penalty",
          "'repetition_penalty' must be greater than 0 (1 = off), got 0");
    }
    double frequency = number(o, where, "frequency_penalty", 0, -2, 2);
    double presence = number(o, where, "presence_penalty", 0, -2, 2);
    return base.withMinP(minP)
        .withPenalties(repetition, frequency, presence)
        .withLogitBias(logitBias(o, where, vocab));
  }

  private static double number(
      ObjectNode o, String where, String name, double dflt, double min, double max) {
    try {
      return Fields.number(o, name, dflt, min, max);
    } catch (ApiException e) {
      throw ApiException.invalid(where + name, e.getMessage());
    }
  }

  /** OpenAI's {@code logit_bias}: token ids as strings to values in [-100, 100]. */
  private static Map<Integer, Float> logitBias(ObjectNode o, String where, int vocab) {
    String param = where + "logit_bias";
    JsonNode n = o.get("logit_bias");
    if (n == null || n.isNull()) {
      return Map.of();
    }
    if (!n.isObject()) {
      throw ApiException.invalid(
          param, "'logit_bias' must be an object of token ids (as strings) to numbers");
    }
    if (n.size() > MAX_BIAS_ENTRIES) {
      throw ApiException.invalid(
          param, "'logit_bias' allows at most " + MAX_BIAS_ENTRIES + " entries, got " + n.size());
    }
    Map<Integer, Float> out = new HashMap<>();
    for (Map.Entry<String, JsonNode> e : n.properties()) {
      int id;
      try {
        id = Integer.parseInt(e.getKey().strip());
      } catch (NumberFormatException bad) {
        throw ApiException.invalid(
            param, "'logit_bias' keys must be token ids, got '" + e.getKey() + "'");
      }
      if (id < 0 || id >= vocab) {
        throw ApiException.invalid(
            param,
            "'logit_bias' token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
      JsonNode v = e.getValue();
      if (!v.isNumber() || !Double.isFinite(v.doubleValue())) {
        throw ApiException.invalid(
            param, "'logit_bias' value of token " + id + " must be a number");
      }
      double b = v.doubleValue();
      if (b < -MAX_BIAS || b > MAX_BIAS) {
        throw ApiException.invalid(
            param, "'logit_bias' value of token " + id + " must be between -100 and 100, got " + b);
      }
      out.put(id, (float) b);
    }
    return out;
  }
}
