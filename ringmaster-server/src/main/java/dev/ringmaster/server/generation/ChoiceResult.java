package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.TokenEvent;
import java.util.List;

/**
 * A finished choice, collected for a non-streaming response.
 *
 * @param text visible text
 * @param tokens every generated token (a final stop token included) with its logprobs
 * @param visible for each token, whether its text is part of the output (false for stop tokens)
 * @param done how it ended
 */
public record ChoiceResult(
    String text, List<TokenEvent> tokens, List<Boolean> visible, ChoiceEvent.Done done) {

  /** The generated token ids. */
  public int[] ids() {
    return tokens.stream().mapToInt(TokenEvent::token).toArray();
  }
}
