package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRejectedException;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestHandle;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.server.api.ApiException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The choices of one HTTP request, running in the engine. The request thread reads their events
 * ({@link #next}) or waits for all of them ({@link #collect}), and cancels them when the client
 * goes away. The engine thread only queues token ids; the reading thread detokenizes them and
 * matches stop strings as it reads. Closing it cancels what still runs and takes it out of the
 * {@link RequestRegistry}.
 */
public final class Generation implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Generation.class.getName());

  /** How often a waiting request thread looks whether its client is still connected. */
  private static final long CLIENT_CHECK_MS = 50;

  private final BlockingQueue<ChoiceListener.Raw> raw = new LinkedBlockingQueue<>();
  private final ArrayDeque<ChoiceEvent> ready = new ArrayDeque<>();
  private final Map<Integer, ChoiceDecoder> decoders = new HashMap<>();
  private final List<ChoiceListener> listeners = new ArrayList<>();
  private final List<RequestHandle> handles = new ArrayList<>();
  private final int choices;
  private final BatchEngine engine;
  private RequestRegistry registry;
  private String rid;
  private volatile boolean aborted;
  private int done;

  private Generation(int choices, BatchEngine engine) {
    this.choices = choices;
    this.engine = engine;
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
    Generation g = new Generation(requests.size(), engine);
    try {
      for (ChoiceRequest r : requests) {
        ChoiceListener l = new ChoiceListener(r.index(), g.raw, observer);
        ChoiceDecoder d = new ChoiceDecoder(r, tokenizer, observer, l.submitted());
        g.decoders.put(r.index(), d);
        g.listeners.add(l);
        EngineRequest er =
            new EngineRequest(
                null,
                r.promptIds(),
                r.params(),
                eosIds,
                r.topLogprobs(),
                l,
                r.constraint() == null ? null : r.constraint().newState());
        RequestHandle h = engine.submit(er);
        d.handle(h);
        g.handles.add(h);
      }
    } catch (EngineRejectedException e) {
      g.close();
      throw switch (e.reason()) {
        case QUEUE_FULL -> ApiException.unavailable("server_overloaded", e.getMessage(), 1);
        case SHUTTING_DOWN -> ApiException.unavailable("shutting_down", e.getMessage(), 5);
        case INVALID -> ApiException.contextExceeded("max_tokens", e.getMessage());
      };
    }
    return g;
  }

  /**
   * Like {@link #start}, and registers the generation under {@code rid} (for {@code
   * /abort_request}) until it is closed.
   *
   * @param receivedNanos when the HTTP request arrived ({@link System#nanoTime}), for the {@code
   *     request_process} metric; 0 when unknown
   */
  public static Generation start(
      BatchEngine engine,
      Tokenizer tokenizer,
      int[] eosIds,
      List<ChoiceRequest> requests,
      LatencyObserver observer,
      RequestRegistry registry,
      String rid,
      long receivedNanos) {
    if (receivedNanos != 0) {
      observer.requestProcessed((System.nanoTime() - receivedNanos) / 1e9);
    }
    Generation g = start(engine, tokenizer, eosIds, requests, observer);
    g.registry = registry;
    g.rid = rid;
    registry.add(rid, g);
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
    while (ready.isEmpty()) {
      if (finished()) {
        return null;
      }
      decode(raw.take());
    }
    return take();
  }

  /**
   * The next event, waiting at most {@code timeoutMs}; null when none came in time or every choice
   * has ended (see {@link #finished}).
   */
  public ChoiceEvent poll(long timeoutMs) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000;
    while (ready.isEmpty()) {
      if (finished()) {
        return null;
      }
      ChoiceListener.Raw r = raw.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
      if (r == null) {
        return null;
      }
      decode(r);
    }
    return take();
  }

  /** Detokenizes one item from the engine here, on the request's thread. */
  private void decode(ChoiceListener.Raw r) {
    decoders.get(r.index()).accept(r, ready::add);
  }

  private ChoiceEvent take() {
    ChoiceEvent e = ready.poll();
    if (e instanceof ChoiceEvent.Done) {
      done++;
    }
    return e;
  }

  /**
   * Tells the metrics that a response chunk of choice {@code index} was written and flushed; the
   * first after its first token times that token's emission ({@code first_token_emit}).
   */
  public void sent(int index) {
    ChoiceDecoder d = decoders.get(index);
    if (d != null) {
      d.sent(System.nanoTime());
    }
  }

  /** Cancels every choice (client gone, or the request is abandoned). */
  public void cancel() {
    handles.forEach(RequestHandle::cancel);
  }

  /** Cancels every choice at the client's request ({@code /abort_request}). */
  public void abort() {
    aborted = true;
    cancel();
  }

  /**
   * Whether an aborted choice that produced nothing was stopped by the server's shutdown (not by
   * the client): such a request never ran and is worth retrying elsewhere.
   */
  public boolean abortedByShutdown(ChoiceEvent.Done d) {
    return d.reason() == FinishReason.ABORT
        && d.completionTokens() == 0
        && !aborted
        && !engine.isAccepting();
  }

  /** The retryable 503 for a request that shutdown aborted before it produced anything. */
  public static ApiException shutdownAbort() {
    return ApiException.unavailable(
        "shutting_down", "the server shut down before this request ran; retry it", 5);
  }

  /**
   * Cancels what still runs and leaves the registry; outcomes that come later go to the metrics
   * without being read. Idempotent.
   */
  @Override
  public void close() {
    if (!finished()) {
      cancel();
      listeners.forEach(ChoiceListener::abandon);
      // Ends already queued are counted here; later ones by their listeners.
      for (ChoiceListener.Raw r; (r = raw.poll()) != null; ) {
        if (r instanceof ChoiceListener.End) {
          decode(r);
        }
      }
      ready.clear();
    }
    if (registry != null) {
      registry.remove(rid, this);
    }
  }

  /**
   * Waits for every choice and returns them by index.
   *
   * @throws ApiException 500 when a choice failed inside the engine
   */
  public List<ChoiceResult> collect() throws InterruptedException {
    return collect(() -> false);
  }

  /**
   * Waits for every choice and returns them by index, looking every few milliseconds whether the
   * client is still there: when {@code clientGone} says it left, the choices are cancelled (they
   * leave the batch at the engine's next step) and {@link ClientLeftException} is thrown.
   *
   * @throws ApiException 500 when a choice failed inside the engine, 503 when shutdown aborted it
   *     before it produced anything
   */
  public List<ChoiceResult> collect(BooleanSupplier clientGone) throws InterruptedException {
    List<StringBuilder> text = new ArrayList<>();
    List<List<TokenEvent>> tokens = new ArrayList<>();
    List<List<Boolean>> visible = new ArrayList<>();
    ChoiceEvent.Done[] ends = new ChoiceEvent.Done[choices];
    int base = Integer.MAX_VALUE;
    List<ChoiceEvent> all = new ArrayList<>();
    long nextCheck = System.nanoTime() + CLIENT_CHECK_MS * 1_000_000;
    while (!finished()) {
      ChoiceEvent e = poll(CLIENT_CHECK_MS);
      if (System.nanoTime() >= nextCheck) {
        nextCheck = System.nanoTime() + CLIENT_CHECK_MS * 1_000_000;
        if (clientGone.getAsBoolean()) {
          cancel();
          throw new ClientLeftException();
        }
      }
      if (e == null) {
        continue;
      }
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
      if (abortedByShutdown(ends[i])) {
        throw shutdownAbort();
      }
      out.add(new ChoiceResult(text.get(i).toString(), tokens.get(i), visible.get(i), ends[i]));
    }
    return out;
  }

  /**
   * The 500 error for a choice that failed in the engine. The fault goes to the log with its stack
   * trace; the client gets its message only, no exception class or trace.
   */
  public static ApiException internalError(ChoiceEvent.Done d) {
    LOG.log(System.Logger.Level.ERROR, "generation failed inside the engine", d.error());
    String cause = d.error() == null ? null : d.error().getMessage();
    return ApiException.internal(
        "generation failed inside the engine" + (cause == null ? "" : ": " + cause));
  }

  /** The client disconnected while its request was waiting for the engine. */
  public static final class ClientLeftException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ClientLeftException() {
      super("client disconnected", null, false, false);
    }
  }
}
