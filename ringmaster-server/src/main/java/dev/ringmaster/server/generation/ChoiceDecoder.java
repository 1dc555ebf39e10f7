package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.PrefillTimes;
import dev.ringmaster.engine.batch.RequestHandle;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.model.tokenizer.StreamDecoder;
import dev.ringmaster.model.tokenizer.Tokenizer;
import java.util.function.Consumer;

/**
 * The request-side half of one choice, on the request's own thread: detokenizes its tokens, applies
 * stop strings and turns them into {@link ChoiceEvent}s, and feeds the latency metrics. When a stop
 * string matches it asks the engine to stop the request ({@link RequestHandle#stop}); tokens the
 * engine made before it saw that are dropped, and not counted as output.
 */
final class ChoiceDecoder {
  private final int index;
  private final StreamDecoder decoder;
  private final StopMatcher stops;
  private final LatencyObserver observer;
  private final long submitted;
  private RequestHandle handle;
  private long firstToken;
  private long firstTokenOnHost; // the engine's time for it, from its prefill times
  private boolean emitted;
  private long lastToken;
  private int consumed;
  private Object matchedStop;

  ChoiceDecoder(
      ChoiceRequest request, Tokenizer tokenizer, LatencyObserver observer, long submitted) {
    this.index = request.index();
    this.decoder = tokenizer.newStreamDecoder(true);
    this.stops = new StopMatcher(request.stopStrings());
    this.observer = observer;
    this.submitted = submitted;
  }

  /** The engine's handle of this choice, for stopping it. */
  void handle(RequestHandle h) {
    this.handle = h;
  }

  /** Turns one queued item into events for {@code sink}. */
  void accept(ChoiceListener.Raw raw, Consumer<ChoiceEvent> sink) {
    switch (raw) {
      case ChoiceListener.Prefilled p -> prefilled(p.times());
      case ChoiceListener.Token t -> token(t.event(), t.nanos(), sink);
      case ChoiceListener.End e -> end(e.outcome(), e.nanos(), sink);
    }
  }

  private void prefilled(PrefillTimes p) {
    firstTokenOnHost = p.tokenNanos();
    observer.prefilled(
        (p.firstStepNanos() - submitted) / 1e9,
        (p.tokenNanos() - p.firstStepNanos()) / 1e9,
        p.steps());
  }

  /**
   * The endpoint wrote and flushed a response chunk for this choice at {@code nanos}: the first one
   * after the first token times that token's emission.
   */
  void sent(long nanos) {
    if (!emitted && consumed > 0 && firstTokenOnHost != 0) {
      emitted = true;
      observer.firstTokenEmitted((nanos - firstTokenOnHost) / 1e9);
    }
  }

  private void token(TokenEvent event, long nanos, Consumer<ChoiceEvent> sink) {
    if (stops.matched() != null) {
      return; // made before the engine saw the stop
    }
    consumed++;
    if (firstToken == 0) {
      firstToken = nanos;
      observer.firstToken((nanos - submitted) / 1e9);
    } else {
      observer.interToken((nanos - lastToken) / 1e9);
    }
    lastToken = nanos;
    if (event.stopToken()) {
      matchedStop = event.token();
      sink.accept(new ChoiceEvent.Delta(index, "", event, true));
      return;
    }
    String text = stops.push(decoder.next(event.token()));
    sink.accept(new ChoiceEvent.Delta(index, text, event, false));
    if (stops.matched() != null) {
      matchedStop = stops.matched();
      if (handle != null) {
        handle.stop();
      }
    }
  }

  private void end(RequestOutcome outcome, long nanos, Consumer<ChoiceEvent> sink) {
    boolean stringStop = stops.matched() != null;
    if (outcome.reason() != FinishReason.ERROR && !stringStop) {
      String tail = stops.push(decoder.flush());
      tail += stops.flush();
      if (!tail.isEmpty()) {
        sink.accept(new ChoiceEvent.Delta(index, tail, null, false));
      }
    }
    FinishReason reason =
        stringStop && outcome.reason() != FinishReason.ERROR ? FinishReason.STOP : outcome.reason();
    ChoiceEvent.Done done =
        new ChoiceEvent.Done(
            index,
            reason,
            matchedStop,
            outcome.promptTokens(),
            stringStop ? consumed : outcome.completionTokens(),
            outcome.cachedTokens(),
            outcome.error(),
            (nanos - submitted) / 1e9,
            firstToken == 0 ? Double.NaN : (firstToken - submitted) / 1e9);
    observer.finished(done);
    sink.accept(done);
  }

  /** The end of a choice nobody reads any more, for the metrics. */
  static ChoiceEvent.Done unread(int index, RequestOutcome o, long submitted, long nanos) {
    return new ChoiceEvent.Done(
        index,
        o.reason(),
        null,
        o.promptTokens(),
        o.completionTokens(),
        o.cachedTokens(),
        o.error(),
        (nanos - submitted) / 1e9,
        Double.NaN);
  }
}
