package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.TokenEvent;

/** What happened to one choice of a generation, in order: deltas, then one {@link Done}. */
public sealed interface ChoiceEvent {
  /** The choice index. */
  int index();

  /**
   * New output.
   *
   * @param index choice index
   * @param text text that became visible (may be empty while a character or a possible stop string
   *     is incomplete)
   * @param token the token behind it, or null for text released at the end
   * @param hidden whether the token is a stop token whose text is not shown
   */
  record Delta(int index, String text, TokenEvent token, boolean hidden) implements ChoiceEvent {}

  /**
   * The choice ended.
   *
   * @param index choice index
   * @param reason why
   * @param matchedStop the stop string or stop token id that ended it, or null
   * @param promptTokens prompt length
   * @param completionTokens tokens generated
   * @param cachedTokens prompt tokens taken from the prefix cache
   * @param error the fault behind {@link FinishReason#ERROR}, else null
   * @param e2eSeconds seconds from submission to the end
   * @param ttftSeconds seconds from submission to the first token, NaN if none
   */
  record Done(
      int index,
      FinishReason reason,
      Object matchedStop,
      int promptTokens,
      int completionTokens,
      int cachedTokens,
      Throwable error,
      double e2eSeconds,
      double ttftSeconds)
      implements ChoiceEvent {

    /** The OpenAI finish_reason string. */
    public String finishReason() {
      return switch (reason) {
        case STOP -> "stop";
        case LENGTH -> "length";
        case ABORT -> "abort";
        case ERROR -> "error";
      };
    }
  }
}
