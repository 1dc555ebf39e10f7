package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.constraint.OutputConstraint;
import dev.ringmaster.server.ServingModel;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.api.ConstraintFields;
import dev.ringmaster.server.api.Fields;
import dev.ringmaster.server.api.SamplingFields;
import dev.ringmaster.server.generation.ChoiceRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The sampling and stopping parameters shared by completions and chat, parsed and checked.
 *
 * @param maxTokens requested output limit, or null for the endpoint's default
 * @param temperature 0 = greedy
 * @param topP nucleus mass
 * @param topK 0 = off
 * @param seed sampling seed, or null for a random one
 * @param stopStrings stop strings
 * @param stopIds stop token ids
 * @param ignoreEos keep going past end-of-sequence
 * @param n choices per prompt
 * @param topLogprobs -1 none, else how many alternatives per token
 * @param stream server-sent events
 * @param includeUsage send a usage chunk at the end of a stream
 * @param extra min-p, penalties and logit bias ({@link SamplingFields}), on greedy defaults
 * @param constraint the output constraint ({@link ConstraintFields}), or null for none
 */
record OpenAiParams(
    Integer maxTokens,
    double temperature,
    double topP,
    int topK,
    Long seed,
    List<String> stopStrings,
    List<Integer> stopIds,
    boolean ignoreEos,
    int n,
    int topLogprobs,
    boolean stream,
    boolean includeUsage,
    SamplingParams extra,
    OutputConstraint constraint) {

  static final int MAX_TOP_LOGPROBS = 20;
  private static final int MAX_STOPS = 16;
  private static final Set<String> STREAM_OPTIONS =
      Set.of("include_usage", "continuous_usage_stats");

  /**
   * Parses the common fields ({@code max_tokens} and its chat alias {@code max_completion_tokens},
   * sampling, stops, {@code n}, streaming).
   *
   * @param topLogprobs how many alternatives per token the endpoint parsed, -1 for none
   * @param toolsHandled whether the endpoint handles {@code tools} and {@code tool_choice} itself
   *     (chat does; elsewhere they are refused)
   */
  static OpenAiParams parse(
      ObjectNode o, ServingModel model, int maxChoices, int topLogprobs, boolean toolsHandled) {
    String requested = Fields.string(o, "model", null);
    if (!model.answersTo(requested)) {
      throw ApiException.notFound(
          "model",
          "model_not_found",
          "The model '"
              + requested
              + "' does not exist; this server serves '"
              + model.name()
              + "'");
    }
    rejectUnsupported(o, toolsHandled);
    SamplingParams extra = SamplingFields.apply(o, "", SamplingParams.greedy(1), model.vocabSize());
    Integer maxTokens = null;
    for (String f : List.of("max_tokens", "max_completion_tokens")) {
      if (Fields.has(o, f)) {
        maxTokens = (int) Fields.integer(o, f, 0, 1, Integer.MAX_VALUE);
      }
    }
    double temperature = Fields.number(o, "temperature", 1.0, 0, 100);
    double topP = Fields.number(o, "top_p", 1.0, 0, 1);
    if (topP == 0) {
      throw ApiException.invalid("top_p", "'top_p' must be greater than 0");
    }
    int topK = (int) Fields.integer(o, "top_k", -1, -1, Integer.MAX_VALUE);
    Long seed =
        Fields.has(o, "seed") ? Fields.integer(o, "seed", 0, Long.MIN_VALUE, Long.MAX_VALUE) : null;
    List<String> stops = new ArrayList<>();
    List<Integer> stopIds = new ArrayList<>();
    Fields.stops(o, "stop", MAX_STOPS, model.vocabSize(), stops, stopIds);
    if (Fields.has(o, "stop_token_ids")) {
      for (int id : Fields.tokenIds("stop_token_ids", o.get("stop_token_ids"), model.vocabSize())) {
        stopIds.add(id);
      }
    }
    boolean ignoreEos = Fields.bool(o, "ignore_eos", false);
    int n = (int) Fields.integer(o, "n", 1, 1, maxChoices);
    long bestOf = Fields.integer(o, "best_of", n, 1, Integer.MAX_VALUE);
    if (bestOf != n) {
      throw ApiException.unsupported("best_of", "'best_of' other than 'n' is not supported");
    }
    boolean stream = Fields.bool(o, "stream", false);
    ObjectNode so = Fields.object(o, "stream_options");
    boolean includeUsage = false;
    if (so != null) {
      if (!stream) {
        throw ApiException.invalid(
            "stream_options", "'stream_options' is only allowed when 'stream' is true");
      }
      Fields.onlyKnown(so, "stream_options", STREAM_OPTIONS);
      includeUsage = Fields.bool(so, "include_usage", false);
    }
    return new OpenAiParams(
        maxTokens,
        temperature,
        topP,
        topK <= 0 ? 0 : topK,
        seed,
        stops,
        stopIds,
        ignoreEos,
        n,
        topLogprobs,
        stream,
        includeUsage,
        extra,
        ConstraintFields.openAi(o, model.constraints()));
  }

  /** Parameters we do not implement: accepted only at their neutral value. */
  private static void rejectUnsupported(ObjectNode o, boolean toolsHandled) {
    if (Fields.integer(o, "min_tokens", 0, 0, Integer.MAX_VALUE) != 0) {
      throw ApiException.unsupported("min_tokens", "'min_tokens' is not supported");
    }
    for (String f : List.of("functions", "suffix", "audio", "prediction")) {
      JsonNode v = o.get(f);
      if (v != null && !v.isNull() && !(v.isArray() && v.isEmpty())) {
        throw ApiException.unsupported(
            f,
            "'"
                + f
                + "' is not supported"
                + (f.equals("functions") ? "; declare functions in 'tools' instead" : ""));
      }
    }
    if (toolsHandled) {
      return;
    }
    JsonNode tools = o.get("tools");
    if (tools != null && !tools.isNull() && !(tools.isArray() && tools.isEmpty())) {
      throw ApiException.unsupported("tools", "'tools' is only supported by /v1/chat/completions");
    }
    JsonNode choice = o.get("tool_choice");
    if (choice != null && !choice.isNull() && !"none".equals(choice.asText())) {
      throw ApiException.unsupported(
          "tool_choice", "'tool_choice' is only supported by /v1/chat/completions");
    }
    JsonNode modalities = o.get("modalities");
    if (modalities != null && modalities.isArray()) {
      for (JsonNode m : modalities) {
        if (!"text".equals(m.asText())) {
          throw ApiException.unsupported("modalities", "only the 'text' modality is supported");
        }
      }
    }
  }

  /** These parameters with another output constraint. */
  OpenAiParams withConstraint(OutputConstraint c) {
    return new OpenAiParams(
        maxTokens,
        temperature,
        topP,
        topK,
        seed,
        stopStrings,
        stopIds,
        ignoreEos,
        n,
        topLogprobs,
        stream,
        includeUsage,
        extra,
        c);
  }

  /**
   * The choices for one prompt, checked against the context.
   *
   * @param firstIndex index of the first choice
   * @param defaultMaxTokens output limit when none was given (capped by the room left)
   * @param promptParam the parameter the prompt came from, for errors
   */
  List<ChoiceRequest> choices(
      int[] prompt, int firstIndex, int defaultMaxTokens, ServingModel model, String promptParam) {
    int limit = model.maxSequenceLength();
    if (prompt.length == 0) {
      throw ApiException.invalid(promptParam, "the prompt is empty");
    }
    if (prompt.length >= limit) {
      throw ApiException.contextExceeded(
          promptParam,
          "the prompt has "
              + prompt.length
              + " tokens but the maximum sequence length is "
              + limit
              + " (the prompt must leave room for at least one new token)");
    }
    int room = limit - prompt.length;
    int max;
    if (maxTokens != null) {
      if (maxTokens > room) {
        throw ApiException.contextExceeded(
            "max_tokens",
            "max_tokens is "
                + maxTokens
                + " but the prompt has "
                + prompt.length
                + " tokens and the maximum sequence length is "
                + limit
                + ": at most "
                + room
                + " new tokens fit");
      }
      max = maxTokens;
    } else {
      max = Math.min(defaultMaxTokens, room);
    }
    List<ChoiceRequest> out = new ArrayList<>();
    long base = seed != null ? seed : ThreadLocalRandom.current().nextLong();
    for (int i = 0; i < n; i++) {
      SamplingParams p =
          new SamplingParams(
              temperature,
              topP,
              topK,
              base + i,
              max,
              ignoreEos,
              stopIds,
              extra.minP(),
              extra.repetitionPenalty(),
              extra.frequencyPenalty(),
              extra.presencePenalty(),
              extra.logitBias());
      out.add(new ChoiceRequest(firstIndex + i, prompt, p, stopStrings, topLogprobs, constraint));
    }
    return out;
  }
}
