package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.batch.EngineRejectedException.Reason;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The continuous-batching engine. One platform thread owns the model and every cache: it admits
 * requests, plans a step (decodes plus prefill chunks), runs one batched forward, samples, hands
 * tokens to listeners, and retires finished requests, then starts over. Requests join and leave
 * only between steps. Other threads only {@link #submit}, {@link RequestHandle#cancel cancel} and
 * read {@link #stats}.
 *
 * <p>Faults are contained: when a forward throws, each sequence of the step is retried alone, so
 * only the requests that fail by themselves end with {@link FinishReason#ERROR}; a listener that
 * throws fails only its own request. Greedy results do not depend on batching as long as the
 * model's forward is per-row deterministic (the CPU one is).
 */
public final class BatchEngine implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());
  private static final Object WAKE = new Object();

  private final LanguageModel model;
  private final BatchConfig config;
  private final KvBlockPool pool;
  private final Scheduler scheduler;
  private final int vocab;
  private final int context;
  private final SamplingBatch sampling = new SamplingBatch();
  private final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private final AtomicLong steps = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private final Thread thread;
  private volatile int running;
  private volatile long preemptions;
  private volatile boolean accepting = true;
  private volatile boolean closing;

  private BatchEngine(LanguageModel model, BatchConfig config) {
    this.model = model;
    this.config = config;
    this.pool = new KvBlockPool(config.pageSize(), config.kvBlocks());
    this.scheduler = new Scheduler(config, pool, model::newCache, queued);
    this.vocab = model.config().vocabSize();
    this.context = model.config().maxPositionEmbeddings();
    this.thread = Thread.ofPlatform().name("ringmaster-engine").daemon(true).unstarted(this::loop);
  }

  /** Starts an engine thread over a model. */
  public static BatchEngine start(LanguageModel model, BatchConfig config) {
    BatchEngine e = new BatchEngine(model, config);
    e.thread.start();
    return e;
  }

  /** The model the engine drives. */
  public LanguageModel model() {
    return model;
  }

  /** The scheduling limits. */
  public BatchConfig config() {
    return config;
  }

  /** The KV block pool (read-only use: counts). */
  public KvBlockPool pool() {
    return pool;
  }

  /** Positions a sequence may use: the smaller of the model context and the whole KV pool. */
  public int maxSequenceLength() {
    return (int) Math.min(context, pool.capacityTokens());
  }

  /**
   * Queues a request.
   *
   * @throws EngineRejectedException when the queue is full, the engine is shutting down, or the
   *     request can never run (bad token ids, too long for the context or the KV pool)
   */
  public RequestHandle submit(EngineRequest request) {
    validate(request);
    if (!accepting) {
      throw new EngineRejectedException(Reason.SHUTTING_DOWN, "the server is shutting down");
    }
    if (queued.incrementAndGet() > config.maxQueuedRequests()) {
      queued.decrementAndGet();
      throw new EngineRejectedException(
          Reason.QUEUE_FULL,
          "the waiting queue is full (" + config.maxQueuedRequests() + " requests); retry later");
    }
    String id = request.id() != null ? request.id() : "req-" + ids.incrementAndGet();
    RequestHandle handle = new RequestHandle(id, () -> inbox.offer(WAKE));
    inbox.offer(new Sequence(request, handle, context));
    return handle;
  }

  private void validate(EngineRequest r) {
    int[] prompt = r.promptIds();
    if (prompt.length == 0) {
      throw new EngineRejectedException(Reason.INVALID, "the prompt is empty");
    }
    for (int id : prompt) {
      if (id < 0 || id >= vocab) {
        throw new EngineRejectedException(
            Reason.INVALID,
            "token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    for (int id : r.params().logitBias().keySet()) {
      if (id >= vocab) {
        throw new EngineRejectedException(
            Reason.INVALID,
            "logit_bias token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    if (r.params().maxNewTokens() < 1) {
      throw new EngineRejectedException(Reason.INVALID, "max new tokens must be >= 1");
    }
    long total = (long) prompt.length + r.params().maxNewTokens();
    if (total > maxSequenceLength()) {
      throw new EngineRejectedException(
          Reason.INVALID,
          "prompt ("
              + prompt.length
              + " tokens) plus max new tokens ("
              + r.params().maxNewTokens()
              + ") exceeds the maximum sequence length of "
              + maxSequenceLength()
              + " tokens");
    }
  }

  /** A snapshot of the load. */
  public EngineStats stats() {
    return new EngineStats(
        running,
        queued.get(),
        pool.used(),
        pool.capacity(),
        pool.pageSize(),
        steps.get(),
        preemptions);
  }

  /** Whether nothing is running or waiting. */
  public boolean isIdle() {
    return running == 0 && queued.get() == 0;
  }

  /** Refuses new requests from now on; running and queued ones continue. */
  public void stopAccepting() {
    accepting = false;
  }

  /** Whether new requests are accepted. */
  public boolean isAccepting() {
    return accepting && !closing;
  }

  /** Waits until the engine is idle or the timeout passes; returns whether it is idle. */
  public boolean awaitIdle(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!isIdle()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  /**
   * Stops the engine: refuses new requests, aborts every running and queued one (their listeners
   * get {@link FinishReason#ABORT}), and waits for the engine thread to end.
   */
  @Override
  public void close() {
    accepting = false;
    closing = true;
    inbox.offer(WAKE);
    try {
      thread.join(Duration.ofSeconds(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // A submit that raced with close may have queued after the thread's last look.
    if (!thread.isAlive()) {
      for (Object o; (o = inbox.poll()) != null; ) {
        if (o instanceof Sequence s) {
          queued.decrementAndGet();
          s.finished = true;
          s.request
              .listener()
              .onFinish(new RequestOutcome(FinishReason.ABORT, s.promptLength, 0, 0, null));
        }
      }
    }
  }

  private void loop() {
    while (true) {
      try {
        if (!pullInbox()) {
          return;
        }
        for (Sequence s : scheduler.cancelled()) {
          finish(s, FinishReason.ABORT, null);
        }
        scheduler.admit();
        Step step = scheduler.plan();
        publish();
        if (step != null) {
          execute(step);
          steps.incrementAndGet();
        } else if (!scheduler.isEmpty()) {
          Thread.sleep(1); // nothing can run until a request leaves; do not spin
        }
        publish();
      } catch (InterruptedException e) {
        closing = true;
      } catch (RuntimeException | OutOfMemoryError | StackOverflowError t) {
        // A bug in scheduling itself: fail everyone rather than let the thread die.
        LOG.log(System.Logger.Level.ERROR, "engine step failed; failing all requests", t);
        for (Sequence s : scheduler.all()) {
          finish(s, FinishReason.ERROR, t);
        }
        publish();
      }
    }
  }

  /** Moves submitted requests to the scheduler; blocks while idle. False when closed and done. */
  private boolean pullInbox() {
    List<Object> batch = new ArrayList<>();
    if (scheduler.isEmpty()) {
      if (closing && inbox.isEmpty()) {
        return false;
      }
      try {
        Object first = inbox.poll(1, TimeUnit.SECONDS);
        if (first == null) {
          return true;
        }
        batch.add(first);
      } catch (InterruptedException e) {
        closing = true;
      }
    }
    inbox.drainTo(batch);
    for (Object o : batch) {
      if (o instanceof Sequence s) {
        scheduler.enqueue(s);
      }
    }
    if (closing) {
      for (Sequence s : scheduler.all()) {
        finish(s, FinishReason.ABORT, null);
      }
    }
    return true;
  }

  private void publish() {
    running = scheduler.runningCount();
    preemptions = scheduler.preemptions();
  }

  private void execute(Step step) {
    int n = step.seqs().size();
    try {
      emit(step, 0, n, forward(step, 0, n));
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError batchFault) {
      if (n == 1) {
        finish(step.seqs().getFirst(), FinishReason.ERROR, batchFault);
        return;
      }
      // Find the culprits: rerun each sequence alone.
      for (int i = 0; i < n; i++) {
        try {
          emit(step, i, i + 1, forward(step, i, i + 1));
        } catch (RuntimeException | OutOfMemoryError | StackOverflowError fault) {
          finish(step.seqs().get(i), FinishReason.ERROR, fault);
        }
      }
    }
  }

  /**
   * Runs sequences {@code [from, to)} of the step and chooses the next token of each that samples:
   * through {@link LanguageModel#forwardGreedy} when every such row takes the argmax of its raw
   * logits without logprobs (a device computes it where the logits are), else {@link
   * LanguageModel#forwardSample}.
   */
  private SampledTokens forward(Step step, int from, int to) {
    Step.Inputs in = step.inputs(from, to);
    int[] before = new int[to - from];
    for (int i = 0; i < before.length; i++) {
      before[i] = in.caches()[i].length();
    }
    sampling.clear();
    for (int i = from; i < to; i++) {
      if (step.samples()[i]) {
        step.seqs().get(i).addSamplingRow(sampling);
      }
    }
    try {
      if (sampling.allRawGreedy()) {
        return SampledTokens.tokensOnly(
            model.forwardGreedy(in.tokens(), in.layout(), in.caches(), in.logitRows()));
      }
      return model.forwardSample(in.tokens(), in.layout(), in.caches(), in.logitRows(), sampling);
    } catch (RuntimeException | Error e) {
      // Roll back whatever the failed step appended, so a retry starts from the same state.
      for (int i = 0; i < before.length; i++) {
        KvCache c = in.caches()[i];
        c.setLength(Math.min(before[i], c.length()));
      }
      throw e;
    }
  }

  private void emit(Step step, int from, int to, SampledTokens sampled) {
    int row = 0;
    for (int i = from; i < to; i++) {
      if (!step.samples()[i]) {
        continue;
      }
      Sequence s = step.seqs().get(i);
      int r = row++;
      int token = sampled.tokens()[r];
      boolean stop = s.stopIds.contains(token);
      int top = Math.min(s.request.topLogprobs(), vocab);
      TokenEvent event =
          top < 0
              ? new TokenEvent(token, s.generated(), stop, Float.NaN, new int[0], new float[0])
              : new TokenEvent(
                  token,
                  s.generated(),
                  stop,
                  sampled.logprobs()[r],
                  sampled.topIds(r, top),
                  sampled.topLogprobs(r, top));
      s.append(token);
      boolean more;
      try {
        more = s.request.listener().onToken(event);
      } catch (RuntimeException e) {
        finish(s, FinishReason.ERROR, e);
        continue;
      }
      if (stop || !more) {
        finish(s, FinishReason.STOP, null);
      } else if (s.length() >= s.maxTokens) {
        finish(s, FinishReason.LENGTH, null);
      }
    }
  }

  private void finish(Sequence s, FinishReason reason, Throwable error) {
    if (s.finished) {
      return;
    }
    s.finished = true;
    scheduler.remove(s);
    RequestOutcome outcome =
        new RequestOutcome(reason, s.promptLength, s.generated(), s.preemptions, error);
    try {
      s.request.listener().onFinish(outcome);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "listener of " + s.handle.id() + " threw on finish", e);
    }
  }
}
