package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.KvCache;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The engine thread's bookkeeping: which requests wait, which run, what the next step computes and
 * who holds which KV blocks. Not thread-safe: only the engine thread calls it.
 *
 * <p>Policy: requests are admitted first come, first served while the running batch has room and
 * the pool can hold the whole prompt (its blocks are reserved at admission). Every step runs one
 * token of each decoding request and up to {@code chunkedPrefillSize} prompt tokens, oldest request
 * first, so a long prompt is prefilled in chunks while other streams keep decoding. Blocks are
 * reserved as sequences grow; when a decode finds the pool empty the most recently admitted request
 * is preempted (its blocks freed, its tokens recomputed later). A finished or preempted request's
 * cache is closed, so a model that owns its cache memory gets it back at once.
 */
final class Scheduler {
  private final BatchConfig config;
  private final KvBlockPool pool;
  private final Supplier<KvCache> newCache;
  private final AtomicInteger queued;
  private final Deque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> running = new ArrayList<>();
  private long preemptions;

  /**
   * @param queued count of requests submitted but not running, shared with submitters: this class
   *     decrements it on admission and on removal from the queue, and increments it on preemption
   */
  Scheduler(
      BatchConfig config, KvBlockPool pool, Supplier<KvCache> newCache, AtomicInteger queued) {
    this.config = config;
    this.pool = pool;
    this.newCache = newCache;
    this.queued = queued;
  }

  int runningCount() {
    return running.size();
  }

  int waitingCount() {
    return waiting.size();
  }

  long preemptions() {
    return preemptions;
  }

  boolean isEmpty() {
    return running.isEmpty() && waiting.isEmpty();
  }

  void enqueue(Sequence s) {
    waiting.addLast(s);
  }

  /** Every request, running first then waiting (a copy). */
  List<Sequence> all() {
    List<Sequence> out = new ArrayList<>(running);
    out.addAll(waiting);
    return out;
  }

  /** Cancelled or stopped requests, to be finished with ABORT or STOP. */
  List<Sequence> cancelled() {
    List<Sequence> out = new ArrayList<>();
    for (Sequence s : running) {
      if (s.handle.endRequested()) {
        out.add(s);
      }
    }
    for (Sequence s : waiting) {
      if (s.handle.endRequested()) {
        out.add(s);
      }
    }
    return out;
  }

  /** Moves waiting requests into the running batch while there is room. */
  void admit() {
    while (!waiting.isEmpty() && running.size() < config.maxRunningRequests()) {
      Sequence s = waiting.peekFirst();
      // The whole prompt's blocks are reserved up front, so a prefill never waits for blocks
      // half-way (two half-prefilled prompts could otherwise hold the pool between them forever).
      int need = pool.blocksFor(s.length());
      if (!pool.tryReserve(need)) {
        return;
      }
      s.blocks = need;
      waiting.pollFirst();
      queued.decrementAndGet();
      s.cache = newCache.get();
      s.planned = 0;
      running.add(s);
    }
  }

  /** Plans the next step and reserves its blocks; null when nothing can run. */
  Step plan() {
    return plan(false);
  }

  /**
   * Plans the next step and reserves its blocks; null when nothing can run.
   *
   * @param ahead whether a step is still running: the plan then counts the tokens that step is
   *     sampling as pending, leaves out sequences that step ends by length, never preempts (it
   *     gives up, returning null, when a decode finds no free block), and stays valid only if no
   *     sequence of it ends meanwhile ({@link Step#stillValid})
   */
  Step plan(boolean ahead) {
    List<Sequence> seqs = new ArrayList<>();
    List<Integer> counts = new ArrayList<>();
    int budget = config.chunkedPrefillSize();
    for (int i = 0; i < running.size(); i++) {
      Sequence s = running.get(i);
      if (ahead && s.awaitingToken && s.projectedLength() >= s.maxTokens) {
        continue; // the running step gives it its last token
      }
      int pending = s.pending();
      int n = pending == 1 ? 1 : Math.min(pending, budget);
      if (n == 0) {
        continue;
      }
      n = ahead ? reserveAhead(s, n) : reserve(s, n, pending == 1);
      if (n < 0) {
        return null;
      }
      if (n == 0) {
        // Preempted itself, or a prefill chunk that must wait for blocks.
        if (!running.contains(s)) {
          i--;
        }
        continue;
      }
      if (pending > 1) {
        budget -= n;
      }
      seqs.add(s);
      counts.add(n);
    }
    if (seqs.isEmpty()) {
      return null;
    }
    int[] c = new int[seqs.size()];
    int[] starts = new int[seqs.size()];
    boolean[] samples = new boolean[seqs.size()];
    for (int i = 0; i < c.length; i++) {
      Sequence s = seqs.get(i);
      c[i] = counts.get(i);
      starts[i] = s.cached();
      samples[i] = starts[i] + c[i] == s.projectedLength();
    }
    return new Step(seqs, c, starts, samples);
  }

  /** Like {@link #reserve} without preemption: -1 when a decode finds no block. */
  private int reserveAhead(Sequence s, int n) {
    int need = pool.blocksFor((long) s.cached() + n) - s.blocks;
    if (need <= 0 || pool.tryReserve(need)) {
      s.blocks += Math.max(need, 0);
      return n;
    }
    return n == 1 && s.pending() == 1 ? -1 : 0;
  }

  /**
   * Reserves blocks for {@code n} more tokens of {@code s}; returns how many tokens it may run. A
   * decode that finds the pool empty preempts newer requests, and at worst {@code s} itself.
   */
  private int reserve(Sequence s, int n, boolean decode) {
    while (true) {
      int need = pool.blocksFor((long) s.cached() + n) - s.blocks;
      if (need <= 0 || pool.tryReserve(need)) {
        s.blocks += Math.max(need, 0);
        return n;
      }
      if (!decode) {
        // Not reached while prompts are reserved at admission; kept as a safe fallback.
        return 0;
      }
      Sequence victim = running.getLast();
      preempt(victim);
      if (victim == s) {
        return 0;
      }
    }
  }

  private void preempt(Sequence s) {
    running.remove(s);
    pool.release(s.blocks);
    s.blocks = 0;
    closeCache(s);
    s.preemptions++;
    preemptions++;
    waiting.addFirst(s);
    queued.incrementAndGet();
  }

  /** Takes a finished or failed request out of the batch and returns its blocks. */
  void remove(Sequence s) {
    if (!running.remove(s) && waiting.remove(s)) {
      queued.decrementAndGet();
    }
    pool.release(s.blocks);
    s.blocks = 0;
    closeCache(s);
  }

  /** Gives the cache's storage back to the model (a GPU cache's blocks to its pool). */
  private static void closeCache(Sequence s) {
    if (s.cache != null) {
      s.cache.close();
      s.cache = null;
    }
    s.planned = 0;
    s.awaitingToken = false;
  }
}
