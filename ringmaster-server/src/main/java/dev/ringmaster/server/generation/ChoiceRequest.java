package dev.ringmaster.server.generation;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.constraint.OutputConstraint;
import java.util.List;

/**
 * One sequence to generate: a prompt, sampling, stop strings and how much logprob detail to return.
 * A request with {@code n} choices or several prompts becomes several of these.
 *
 * @param index the choice index reported to the client
 * @param promptIds prompt token ids
 * @param params sampling and stop token ids
 * @param stopStrings strings that end generation; the text is cut before them
 * @param topLogprobs -1 for none, 0 for the chosen token's, k for the top k as well
 * @param constraint the output constraint, or null for none
 */
public record ChoiceRequest(
    int index,
    int[] promptIds,
    SamplingParams params,
    List<String> stopStrings,
    int topLogprobs,
    OutputConstraint constraint) {

  /** A choice without an output constraint. */
  public ChoiceRequest(
      int index,
      int[] promptIds,
      SamplingParams params,
      List<String> stopStrings,
      int topLogprobs) {
    this(index, promptIds, params, stopStrings, topLogprobs, null);
  }

  /** Copies the stop list. */
  public ChoiceRequest {
    stopStrings = List.copyOf(stopStrings);
  }
}
