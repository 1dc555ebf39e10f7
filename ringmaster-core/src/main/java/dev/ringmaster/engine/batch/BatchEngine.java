package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.batch.EngineRejectedException.Reason;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculationSnapshot;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The continuous-batching engine. One platform thread owns the schedule and every cache: it admits
 * requests, plans a step (decodes plus prefill chunks), runs one batched forward, samples, hands
 * tokens to listeners, and retires finished requests, then starts over. Requests join and leave
 * only between steps. Other threads only {@link #submit}, {@link RequestHandle#cancel cancel} or
 * {@link RequestHandle#stop stop}, and read {@link #stats} and {@link #stepTimes}.
 *
 * <p>With {@link BatchConfig#overlap} (the default) the forward runs on a second thread, the model
 * thread, and while it runs the engine thread takes in new requests and plans the next step and
 * builds its inputs, leaving placeholders for the tokens the running step is sampling. When the
 * tokens come back it appends them, signals the listeners, writes the placeholders and submits the
 * next step at once; only if a request of that plan ended meanwhile (a stop token, a cancel) is the
 * step planned again. Without overlap the engine thread runs the forward itself.
 *
 * <p>A constrained row's mask is taken from its constraint's cache when it is there; otherwise it
 * is computed on a mask thread, started when the row goes into the step, so it runs beside the
 * forward and the sampler waits for it only if the logits come first.
 *
 * <p>Faults are contained: when a forward throws, each sequence of the step is retried alone, so
 * only the requests that fail by themselves end with {@link FinishReason#ERROR}; a listener that
 * throws fails only its own request. Greedy results do not depend on batching as long as the
 * model's forward is per-row deterministic (the CPU one is).
 *
 * <p>With speculation ({@link ServingSpeculation}) a freshly planned step may give decode rows a
 * draft ({@link SpeculativeDrafts}): such a row runs its last token and the drafts in the same
 * forward as the other rows, the verifier keeps the accepted prefix and one token of the target's
 * own, and the cache and the row's KV blocks are rolled back to what stands. Steps with drafts are
 * not overlapped (the next plan needs to know how many tokens were accepted).
 *
 * <p>With {@link BatchConfig#jumpForward} a constrained row's sampled token is replaced by it and
 * the bytes its constraint forces after it, retokenised ({@link
 * dev.ringmaster.engine.constraint.ConstraintState#jumpForward}); none of them is in the cache yet,
 * so the next plan runs them as one extend of several tokens (like a prefill chunk, counted against
 * the chunked prefill budget) that samples after the last. A step planned ahead for such a row is
 * planned again.
 */
public final class BatchEngine implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());
  private static final Object WAKE = new Object();

  /** Mask threads: enough for a few concurrent cache misses, never most of the host's cores. */
  private static final int MASK_WORKERS =
      Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 4));

  private final LanguageModel model;
  private final BatchConfig config;
  private final KvBlockAllocator pool;
  private final Scheduler scheduler;
  private final int vocab;
  private final int context;
  private final SamplingBatch sampling = new SamplingBatch();
  private final LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private final AtomicLong steps = new AtomicLong();
  private final AtomicLong ids = new AtomicLong();
  private final Thread thread;
  private final ExecutorService modelThread;

  /** Computes constraint masks that are not cached while the step that needs them runs. */
  private final ExecutorService maskWorkers;

  private final StepClock clock = new StepClock();
  private final SpeculativeDrafts speculation;
  private long landed; // when the latest step's tokens came back (engine thread only)
  private final TokenDelivery delivery;
  private volatile int running;
  private volatile long preemptions;
  private volatile boolean accepting = true;
  private volatile boolean closing;

  private BatchEngine(LanguageModel model, BatchConfig config, ServingSpeculation spec) {
    if (config.radixCache() && !model.sharesKvPages()) {
      throw new IllegalArgumentException(
          "this model's caches cannot share KV pages, so the radix cache cannot run on it;"
              + " pass --disable-radix-cache");
    }
    if (model.kvPageSize().isPresent() && model.kvPageSize().getAsInt() != config.pageSize()) {
      throw new IllegalArgumentException(
          "the scheduler's page size ("
              + config.pageSize()
              + ") differs from the model's KV block size ("
              + model.kvPageSize().getAsInt()
              + "); give both the same --page-size");
    }
    long storage = model.kvCapacityTokens().orElse(Long.MAX_VALUE);
    if ((long) config.kvBlocks() * config.pageSize() > storage) {
      throw new IllegalArgumentException(
          "the scheduler's "
              + config.kvBlocks()
              + " KV blocks of "
              + config.pageSize()
              + " tokens exceed the model's KV storage of "
              + storage
              + " tokens; lower --max-total-tokens or give the cache more memory"
              + " (--mem-fraction-static)");
    }
    this.model = model;
    this.config = config;
    // The scheduler's allocator: every cache the engine makes takes its block ids from it.
    this.pool = new KvBlockAllocator(config.pageSize(), config.kvBlocks());
    this.scheduler = new Scheduler(config, pool, () -> model.newCache(pool), queued);
    this.speculation = spec == null ? null : new SpeculativeDrafts(spec, model, config);
    this.vocab = model.config().vocabSize();
    this.context = model.config().maxPositionEmbeddings();
    this.thread = Thread.ofPlatform().name("ringmaster-engine").daemon(true).unstarted(this::loop);
    this.modelThread =
        config.overlap()
            ? Executors.newSingleThreadExecutor(
                Thread.ofPlatform().name("ringmaster-model").daemon(true).factory())
            : null;
    this.delivery =
        new TokenDelivery(config, scheduler, speculation, vocab, () -> landed, BatchEngine.LOG);
    this.maskWorkers =
        Executors.newFixedThreadPool(
            MASK_WORKERS, Thread.ofPlatform().name("ringmaster-masks-", 0).daemon(true).factory());
  }

  /** Starts an engine thread over a model. */
  public static BatchEngine start(LanguageModel model, BatchConfig config) {
    return start(model, config, null);
  }

  /**
   * Starts an engine thread over a model that speculates as {@code spec} says (null: never); with
   * the auto policy and no cost model given, it first times decode and verify steps on the model.
   */
  public static BatchEngine start(
      LanguageModel model, BatchConfig config, ServingSpeculation spec) {
    BatchEngine e = new BatchEngine(model, config, spec);
    e.thread.start();
    return e;
  }

  /**
   * What speculation did so far and its policy's state; empty when the engine does not speculate.
   */
  public Optional<SpeculationSnapshot> speculation() {
    return speculation == null ? Optional.empty() : Optional.of(speculation.snapshot());
  }

  /** The model the engine drives. */
  public LanguageModel model() {
    return model;
  }

  /** The scheduling limits. */
  public BatchConfig config() {
    return config;
  }

  /**
   * The KV block allocator the scheduler owns, which every cache of this engine takes its blocks
   * from (read-only use: counts).
   */
  public KvBlockAllocator pool() {
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
    RadixCache radix = scheduler.radix();
    return new EngineStats(
        running,
        queued.get(),
        pool.used(),
        pool.capacity(),
        pool.pageSize(),
        steps.get(),
        preemptions,
        radix != null,
        radix == null ? 0 : radix.pages(),
        scheduler.admittedTokens(),
        scheduler.cachedTokens());
  }

  /**
   * Evicts every prefix-cache page no running request uses (their blocks go back to the pool);
   * completes with the number of pages freed once the engine thread did it between two steps.
   */
  public CompletableFuture<Integer> flushCache() {
    FlushCache f = new FlushCache(new CompletableFuture<>());
    inbox.offer(f);
    if (!thread.isAlive()) {
      f.done().complete(0);
    }
    return f.done();
  }

  /** A {@link #flushCache} call travelling to the engine thread. */
  private record FlushCache(CompletableFuture<Integer> done) {}

  /** Host and batch-building time per step (see {@link StepTimes}). */
  public StepTimes stepTimes() {
    return clock.snapshot();
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
    if (modelThread != null && !thread.isAlive()) {
      modelThread.shutdown();
    }
    if (!thread.isAlive()) {
      maskWorkers.shutdown();
    }
    // A submit that raced with close may have queued after the thread's last look.
    if (!thread.isAlive()) {
      for (Object o; (o = inbox.poll()) != null; ) {
        if (o instanceof Sequence s) {
          queued.decrementAndGet();
          s.finished = true;
          s.request
              .listener()
              .onFinish(new RequestOutcome(FinishReason.ABORT, s.promptLength, 0, 0, 0, null));
        }
      }
    }
  }

  /** A step handed to the model: its tokens come back through {@code result}. */
  private record Flight(
      Step step, Future<StepOutput> result, long submitted, long hostNanos, boolean ahead) {}

  private void loop() {
    Flight flight = null;
    long back = -1; // when the last step's tokens came back; -1 after an idle pause
    while (true) {
      try {
        if (flight == null) {
          if (!pullInbox(true)) {
            scheduler.flushCache(); // every request ended: the tree gives its blocks back
            if (speculation != null) {
              speculation.close();
            }
            return;
          }
          abortAllIfClosing();
          finishEnded();
          long b = System.nanoTime();
          scheduler.admit();
          Step step = withDrafts(scheduler.plan());
          clock.built(System.nanoTime() - b);
          publish();
          if (step == null) {
            back = -1;
            if (!scheduler.isEmpty()) {
              Thread.sleep(1); // nothing can run until a request leaves; do not spin
            }
            continue;
          }
          flight = launch(step, back, false);
        } else {
          Step next = null;
          if (config.overlap() && !speculatesNext(flight.step())) {
            // The model is busy with the flight: take in new requests and plan the next batch.
            pullInbox(false);
            long b = System.nanoTime();
            scheduler.admit();
            next = scheduler.plan(true);
            clock.built(System.nanoTime() - b);
          }
          Flight done = flight;
          flight = null;
          back = land(done);
          pullInbox(false);
          abortAllIfClosing();
          finishEnded();
          long b = System.nanoTime();
          boolean ahead = next != null && next.stillValid();
          if (ahead) {
            next.fillDeferred();
            if (speculation != null) {
              speculation.countPlain(next);
            }
          } else {
            scheduler.admit();
            next = withDrafts(scheduler.plan());
          }
          clock.built(System.nanoTime() - b);
          publish();
          if (next != null) {
            flight = launch(next, back, ahead);
          }
        }
      } catch (InterruptedException e) {
        closing = true;
      } catch (RuntimeException | OutOfMemoryError | StackOverflowError t) {
        // A bug in scheduling itself: fail everyone rather than let the thread die.
        LOG.log(System.Logger.Level.ERROR, "engine step failed; failing all requests", t);
        if (flight != null) {
          awaitQuietly(flight); // the model must be done with the caches before they are closed
          flight = null;
        }
        for (Sequence s : scheduler.all()) {
          delivery.finish(s, FinishReason.ERROR, t);
        }
        publish();
      }
    }
  }

  /** The step with the drafts speculation gives it (the step itself without speculation). */
  private Step withDrafts(Step step) {
    return speculation == null ? step : speculation.attach(step, scheduler);
  }

  /**
   * Whether the step after {@code flight} must be planned once it lands: the flight's drafts make
   * its token counts unknown, or the next step would speculate.
   */
  private boolean speculatesNext(Step flight) {
    return speculation != null
        && (flight.hasDrafts(0, flight.seqs().size())
            || speculation.wouldDraft(scheduler.runningCount()));
  }

  /**
   * Commits a step's plan to its sequences and hands it to the model: on the model thread with the
   * overlap schedule, else run here.
   *
   * @param back when the previous step's tokens came back, -1 if the engine was idle
   * @param ahead whether the batch was planned while the previous step ran
   */
  private Flight launch(Step step, long back, boolean ahead) {
    commit(step, 0, step.seqs().size());
    Step.Inputs in = step.inputs();
    boolean raw = fillSampling(step, 0, step.seqs().size());
    long now = System.nanoTime();
    long host = back < 0 ? 0 : now - back;
    notePrefillSteps(step, now);
    Callable<StepOutput> run = () -> forward(step, 0, step.seqs().size(), in, raw);
    if (modelThread != null) {
      return new Flight(step, modelThread.submit(run), now, host, ahead);
    }
    CompletableFuture<StepOutput> result = new CompletableFuture<>();
    try {
      result.complete(run.call());
    } catch (Exception | OutOfMemoryError | StackOverflowError e) {
      result.completeExceptionally(e);
    }
    return new Flight(step, result, now, host, ahead);
  }

  /** Counts the step in the prefill of each of its sequences that has no token yet. */
  private static void notePrefillSteps(Step step, long launched) {
    for (Sequence s : step.seqs()) {
      if (s.generated() == 0) {
        if (s.prefillSteps++ == 0) {
          s.firstStepNanos = launched;
        }
      }
    }
  }

  /** Waits for a step's tokens and hands them out; returns when they came back. */
  private long land(Flight f) throws InterruptedException {
    StepOutput out = null;
    Throwable fault = null;
    try {
      out = f.result().get();
    } catch (ExecutionException e) {
      fault = e.getCause();
    }
    long back = System.nanoTime();
    landed = back;
    clock.step(f.hostNanos(), back - f.submitted(), f.ahead());
    steps.incrementAndGet();
    Step step = f.step();
    int n = step.seqs().size();
    if (fault == null) {
      delivery.emit(step, 0, n, out);
      return back;
    }
    rollback(step, 0, n);
    if (!(fault instanceof RuntimeException
        || fault instanceof OutOfMemoryError
        || fault instanceof StackOverflowError)) {
      throw new IllegalStateException("the model thread failed", fault);
    }
    if (n == 1) {
      delivery.finish(step.seqs().getFirst(), FinishReason.ERROR, fault);
      return System.nanoTime();
    }
    // Find the culprits: rerun each sequence alone, here.
    for (int i = 0; i < n; i++) {
      commit(step, i, i + 1);
      try {
        Step.Inputs in = step.inputs(i, i + 1);
        StepOutput alone = forward(step, i, i + 1, in, fillSampling(step, i, i + 1));
        landed = System.nanoTime();
        delivery.emit(step, i, i + 1, alone);
      } catch (RuntimeException | OutOfMemoryError | StackOverflowError alone) {
        rollback(step, i, i + 1);
        delivery.finish(step.seqs().get(i), FinishReason.ERROR, alone);
      }
    }
    return System.nanoTime();
  }

  private static void awaitQuietly(Flight f) {
    try {
      f.result().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      // the step failed; its requests are failed by the caller
    }
  }

  /** Sequences {@code [from, to)} of the step: their caches will hold the step's tokens. */
  private static void commit(Step step, int from, int to) {
    for (int i = from; i < to; i++) {
      Sequence s = step.seqs().get(i);
      s.planned = step.starts()[i] + step.counts()[i];
      s.awaitingToken = step.samples()[i];
    }
  }

  /** Undoes {@link #commit} and whatever a failed forward appended to the caches. */
  private static void rollback(Step step, int from, int to) {
    for (int i = from; i < to; i++) {
      Sequence s = step.seqs().get(i);
      int start = step.starts()[i];
      if (s.cache != null) {
        s.cache.setLength(Math.min(start, s.cache.length()));
      }
      s.planned = start;
      s.awaitingToken = false;
    }
  }

  /**
   * Fills the sampling rows of {@code [from, to)} (rows with a draft are verified instead); returns
   * whether every row is raw greedy.
   */
  private boolean fillSampling(Step step, int from, int to) {
    sampling.clear();
    for (int i = from; i < to; i++) {
      if (step.samples()[i] && step.draft(i) == null) {
        step.seqs().get(i).addSamplingRow(sampling, maskWorkers);
      }
    }
    return sampling.allRawGreedy();
  }

  /** Moves submitted requests to the scheduler; blocks while idle if asked. False when done. */
  private boolean pullInbox(boolean block) {
    List<Object> batch = new ArrayList<>();
    if (block && scheduler.isEmpty()) {
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
      } else if (o instanceof FlushCache f) {
        f.done().complete(scheduler.flushCache());
      }
    }
    return true;
  }

  private void abortAllIfClosing() {
    if (closing) {
      for (Sequence s : scheduler.all()) {
        delivery.finish(s, FinishReason.ABORT, null);
      }
    }
  }

  /** Finishes cancelled requests (ABORT) and stopped ones (STOP). */
  private void finishEnded() {
    for (Sequence s : scheduler.cancelled()) {
      delivery.finish(s, s.handle.isCancelled() ? FinishReason.ABORT : FinishReason.STOP, null);
    }
  }

  private void publish() {
    running = scheduler.runningCount();
    preemptions = scheduler.preemptions();
  }

  /**
   * Runs one step's inputs and chooses the next token of each row that samples, with the sampling
   * rows in {@link #sampling}: through {@link LanguageModel#forwardGreedy} when every row takes the
   * argmax of its raw logits without logprobs (a device computes it where the logits are), else
   * {@link LanguageModel#forwardSample}. A step with drafts in {@code [from, to)} also goes through
   * {@link LanguageModel#forwardGreedy} when its plain rows and drafts are all decided by raw
   * argmax (every requested row's argmax comes back); otherwise it takes every requested row's
   * logits with {@link LanguageModel#forward} and samples its plain rows on the CPU. A failed
   * forward leaves the caches as they were.
   */
  private StepOutput forward(Step step, int from, int to, Step.Inputs in, boolean rawGreedy) {
    int[] before = new int[in.caches().length];
    for (int i = 0; i < before.length; i++) {
      before[i] = in.caches()[i].length();
    }
    try {
      if (speculation != null && speculation.needsHidden()) {
        // MTP and EAGLE-3 drafters are fed every row's hidden states: logits come to the CPU.
        HiddenLogits out =
            model.forwardHidden(
                in.tokens(), in.layout(), in.caches(), in.logitRows(), speculation.hiddenCapture());
        return new StepOutput(sampleRows(step, from, to, out.logits()), out.logits(), out.hidden());
      }
      if (step.hasDrafts(from, to) && rawGreedy && speculation.argmaxOnly(step, from, to)) {
        // Every row takes its raw argmax: the backend picks it where the logits are.
        int[] argmax = model.forwardGreedy(in.tokens(), in.layout(), in.caches(), in.logitRows());
        int[] plain = step.plainLogitRows(from, to);
        int[] tokens = new int[plain.length];
        for (int r = 0; r < plain.length; r++) {
          tokens[r] = argmax[plain[r]];
        }
        return new StepOutput(SampledTokens.tokensOnly(tokens), null, null, argmax);
      }
      if (step.hasDrafts(from, to)) {
        float[] logits = model.forward(in.tokens(), in.layout(), in.caches(), in.logitRows());
        int[] plain = step.plainLogitRows(from, to);
        float[] rows = new float[plain.length * vocab];
        for (int r = 0; r < plain.length; r++) {
          System.arraycopy(logits, plain[r] * vocab, rows, r * vocab, vocab);
        }
        return new StepOutput(sampling.sampleOnCpu(rows, vocab), logits);
      }
      if (rawGreedy) {
        return new StepOutput(
            SampledTokens.tokensOnly(
                model.forwardGreedy(in.tokens(), in.layout(), in.caches(), in.logitRows())),
            null);
      }
      return new StepOutput(
          model.forwardSample(in.tokens(), in.layout(), in.caches(), in.logitRows(), sampling),
          null);
    } catch (RuntimeException | Error e) {
      // Roll back whatever the failed step appended, so a retry starts from the same state.
      for (int i = 0; i < before.length; i++) {
        KvCache c = in.caches()[i];
        c.setLength(Math.min(before[i], c.length()));
      }
      throw e;
    }
  }

  /** The plain rows' tokens, sampled on the CPU from the step's logits. */
  private SampledTokens sampleRows(Step step, int from, int to, float[] logits) {
    int[] plain = step.plainLogitRows(from, to);
    float[] rows = new float[plain.length * vocab];
    for (int r = 0; r < plain.length; r++) {
      System.arraycopy(logits, plain[r] * vocab, rows, r * vocab, vocab);
    }
    return sampling.sampleOnCpu(rows, vocab);
  }
}
