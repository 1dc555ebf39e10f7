package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRejectedException;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestHandle;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.server.api.ApiException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The choices of one HTTP request, running in the engine. The request thread reads their events
 * ({@link #next}) or waits for all of them ({@link #collect}), and cancels them when the client
 * goes away.
 */
public final class Generation {
  private final BlockingQueue<ChoiceEvent> events = new LinkedBlockingQueue<>();
  private final List<RequestHandle> handles = new ArrayList<>();
  private final int choices;
  private int done;

  private Generation(int choices) {
    this.choices = choices;
  }

  /**
   * Submits every choice. All or nothing: if one is refused the others are cancelled.
   *
   * @throws ApiException 503 when the queue is full or the server is shutting down, 400 when a
   *     choice can never run
   */
  public static Generation start(
      BatchEngine engine,
      Tokenizer tokenizer,
      int[] eosIds,
      List<ChoiceRequest> requests,
      LatencyObserver observer) {
    Generation g = new Generation(requests.size());
    try {
      for (ChoiceRequest r : requests) {
        ChoiceListener l = new ChoiceListener(r, tokenizer, g.events, observer);
        EngineRequest er =
            new EngineRequest(null, r.promptIds(), r.params(), eosIds, r.topLogprobs(), l);
        g.handles.add(engine.submit(er));
      }
    } catch (EngineRejectedException e) {
      g.cancel();
      throw switch (e.reason()) {
        case QUEUE_FULL -> ApiException.unavailable("server_overloaded", e.getMessage(), 1);
        case SHUTTING_DOWN -> ApiException.unavailable("shutting_down", e.getMessage(), 5);
        case INVALID -> ApiException.contextExceeded("max_tokens", e.getMessage());
      };
    }
    return g;
  }

  /** Number of choices. */
  public int choices() {
    return choices;
  }

  /** Whether every choice has ended. */
  public boolean finished() {
    return done == choices;
  }

  /** The next event, waiting for it; null once every choice has ended. */
  public ChoiceEvent next() throws InterruptedException {
    if (finished()) {
      return null;
    }
    ChoiceEvent e = events.take();
    if (e instanceof ChoiceEvent.Done) {
      done++;
    }
    return e;
  }

  /** Cancels every choice (client gone, or the request is abandoned). */
  public void cancel() {
    handles.forEach(RequestHandle::cancel);
  }

  /**
   * Waits for every choice and returns them by index.
   *
   * @throws ApiException 500 when a choice failed inside the engine
   */
  public List<ChoiceResult> collect() throws InterruptedException {
    List<StringBuilder> text = new ArrayList<>();
    List<List<TokenEvent>> tokens = new ArrayList<>();
    List<List<Boolean>> visible = new ArrayList<>();
    ChoiceEvent.Done[] ends = new ChoiceEvent.Done[choices];
    int base = Integer.MAX_VALUE;
    List<ChoiceEvent> all = new ArrayList<>();
    for (ChoiceEvent e; (e = next()) != null; ) {
      all.add(e);
      base = Math.min(base, e.index());
    }
    for (int i = 0; i < choices; i++) {
      text.add(new StringBuilder());
      tokens.add(new ArrayList<>());
      visible.add(new ArrayList<>());
    }
    for (ChoiceEvent e : all) {
      int i = e.index() - base;
      switch (e) {
        case ChoiceEvent.Delta d -> {
          text.get(i).append(d.text());
          if (d.token() != null) {
            tokens.get(i).add(d.token());
            visible.get(i).add(!d.hidden());
          }
        }
        case ChoiceEvent.Done d -> ends[i] = d;
      }
    }
    List<ChoiceResult> out = new ArrayList<>();
    for (int i = 0; i < choices; i++) {
      if (ends[i].reason() == FinishReason.ERROR) {
        throw internalError(ends[i]);
      }
      out.add(new ChoiceResult(text.get(i).toString(), tokens.get(i), visible.get(i), ends[i]));
    }
    return out;
  }

  /** The 500 error for a choice that failed in the engine. */
  public static ApiException internalError(ChoiceEvent.Done d) {
    String cause = d.error() == null ? "unknown" : d.error().toString();
    return ApiException.internal("generation failed inside the engine: " + cause);
  }
}
