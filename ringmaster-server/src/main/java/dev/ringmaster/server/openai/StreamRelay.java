package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.http.SseStream;
import java.util.List;

/**
 * Relays a generation to the client as OpenAI stream chunks, then {@code data: [DONE]}. If the
 * client disconnects the write fails and the generation is cancelled, so the engine drops it at its
 * next step.
 */
final class StreamRelay {
  private StreamRelay() {}

  /**
   * Streams every event.
   *
   * @param promptTokens prompt tokens to report in the usage chunk
   * @param prompts how many prompts the choices answer (each has the same number of choices)
   * @param includeUsage whether to send a usage chunk before {@code [DONE]}
   */
  static void relay(
      Generation g,
      SseStream sse,
      ChoiceFormat format,
      String id,
      String model,
      int promptTokens,
      int prompts,
      boolean includeUsage)
      throws InterruptedException {
    long created = System.currentTimeMillis() / 1000;
    boolean[] started = new boolean[g.choices()];
    int completionTokens = 0;
    int[] cached = new int[g.choices()];
    try {
      for (ChoiceEvent e; (e = g.next()) != null; ) {
        switch (e) {
          case ChoiceEvent.Delta d -> {
            boolean first = !started[d.index()];
            boolean hasLogprobs = d.token() != null && !Float.isNaN(d.token().logprob());
            if (d.hidden() || (d.text().isEmpty() && !hasLogprobs && !first)) {
              continue;
            }
            started[d.index()] = true;
            List<TokenEvent> tokens = d.token() == null ? List.of() : List.of(d.token());
            for (ObjectNode delta : format.delta(d.index(), d.text(), tokens, first)) {
              sse.send(chunk(format, id, created, model, delta));
            }
            g.sent(d.index());
          }
          case ChoiceEvent.Done d -> {
            completionTokens += d.completionTokens();
            cached[d.index()] = d.cachedTokens();
            if (d.reason() == FinishReason.ERROR) {
              sse.send(Json.error(Generation.internalError(d)));
              continue;
            }
            if (!sse.started() && g.abortedByShutdown(d)) {
              throw Generation.shutdownAbort(); // nothing sent yet: a retryable 503
            }
            for (ObjectNode held : format.held(d)) {
              sse.send(chunk(format, id, created, model, held));
            }
            sse.send(chunk(format, id, created, model, format.finish(d)));
          }
        }
      }
      if (includeUsage) {
        ObjectNode u = Responses.head(id, format.chunkObject(), created, model);
        u.putArray("choices");
        u.set(
            "usage",
            Responses.usage(
                promptTokens, completionTokens, Responses.cachedTokens(cached, prompts)));
        sse.send(u);
      }
      sse.done();
    } finally {
      g.close();
    }
  }

  private static ObjectNode chunk(
      ChoiceFormat format, String id, long created, String model, ObjectNode choice) {
    ObjectNode c = Responses.head(id, format.chunkObject(), created, model);
    c.putArray("choices").add(choice);
    return c;
  }
}
