package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.KvBlockAllocator;
import dev.ringmaster.runtime.KvCache;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The engine thread's bookkeeping: which requests wait, which run, what the next step computes and
 * who holds which KV blocks. It owns the engine's {@link KvBlockAllocator}: every block a
 * sequence's cache or the prefix cache holds is taken from it here, before the step that needs it
 * is planned, so the model never runs out of blocks inside a step. Not thread-safe: only the engine
 * thread calls it.
 *
 * <p>Policy: requests are admitted first come, first served while the running batch has room and
 * the allocator can hold the whole prompt (its blocks are taken at admission). Every step runs one
 * token of each decoding request and up to {@code chunkedPrefillSize} prompt tokens, oldest request
 * first, so a long prompt is prefilled in chunks while other streams keep decoding. Blocks are
 * reserved as sequences grow; when a decode finds the pool empty the most recently admitted request
 * is preempted (its blocks freed, its tokens recomputed later). A finished or preempted request's
 * cache is closed, so a model that owns its cache memory gets it back at once.
 *
 * <p>With the radix cache on, an admitted request's cache starts with the cached pages of its
 * longest cached prefix ({@link RadixCache}), at most every whole page before its last token, and
 * only the rest of the prompt is reserved and computed. A sequence hands the whole pages of its
 * prompt to the tree once their prefill is done, and the whole pages of prompt and output when it
 * finishes; the tree then holds a reference on each such page's block beside the sequence's. When
 * the allocator is short, unlocked tree pages are evicted before anything is preempted. With {@link
 * SchedulePolicy#LPM} the waiting requests are admitted longest cached prefix first.
 */
final class Scheduler {
  private final BatchConfig config;
  private final KvBlockAllocator pool;
  private final Supplier<KvCache> newCache;
  private final AtomicInteger queued;
  private final Deque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> running = new ArrayList<>();
  private final RadixCache radix;
  private long preemptions;
  private long arrivals;
  private volatile long admittedTokens;
  private volatile long cachedTokens;

  /** Waiting requests beyond this many are admitted in arrival order even under LPM (SGLang's). */
  static final int LPM_MAX_SORTED = 128;

  /**
   * @param newCache makes an empty cache whose block ids come from {@code pool}
   * @param queued count of requests submitted but not running, shared with submitters: this class
   *     decrements it on admission and on removal from the queue, and increments it on preemption
   */
  Scheduler(
      BatchConfig config, KvBlockAllocator pool, Supplier<KvCache> newCache, AtomicInteger queued) {
    this.config = config;
    this.pool = pool;
    this.newCache = newCache;
    this.queued = queued;
    this.radix = config.radixCache() ? new RadixCache(config.pageSize()) : null;
  }

  /** The prefix cache, or null when it is off. */
  RadixCache radix() {
    return radix;
  }

  /** Tokens of every admission so far (prompts, and recomputed tokens after a preemption). */
  long admittedTokens() {
    return admittedTokens;
  }

  /** Of {@link #admittedTokens}, those taken from the prefix cache. */
  long cachedTokens() {
    return cachedTokens;
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
    s.arrival = arrivals++;
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
    boolean lpm = radix != null && config.schedulePolicy() == SchedulePolicy.LPM;
    if (lpm && waiting.size() > 1 && waiting.size() <= LPM_MAX_SORTED) {
      orderByCachedPrefix();
    }
    while (!waiting.isEmpty() && running.size() < config.maxRunningRequests()) {
      Sequence s = waiting.peekFirst();
      if (!tryAdmit(s)) {
        return;
      }
      waiting.pollFirst();
      queued.decrementAndGet();
      running.add(s);
      if (lpm) {
        for (Sequence w : waiting) {
          if (w.arrival < s.arrival) {
            w.bypassed++;
          }
        }
      }
    }
  }

  /**
   * Gives a waiting request a cache starting with the cached pages of its prefix and takes the
   * blocks of its other prompt tokens; false (nothing changed) when the allocator is short.
   */
  private boolean tryAdmit(Sequence s) {
    List<RadixCache.Node> hit = matchPrefix(s);
    // The whole uncached prompt's blocks are reserved up front, so a prefill never waits for
    // blocks half-way (two half-prefilled prompts could otherwise hold the pool between them).
    int need = pool.blocksFor(s.length()) - hit.size();
    if (radix != null) {
      radix.lock(hit); // the eviction below must not take the pages this request will use
    }
    if (!makeRoom(need)) {
      if (radix != null) {
        radix.unlock(hit);
      }
      return false;
    }
    s.prefixNodes = new ArrayList<>(hit);
    s.prefillCached = false;
    s.cache = newCache.get();
    if (!hit.isEmpty()) {
      List<KvCache.Page> pages = new ArrayList<>(hit.size());
      for (RadixCache.Node n : hit) {
        pages.add(n.page());
      }
      s.cache.attachPages(pages, config.pageSize());
    }
    s.cache.reserve(s.length());
    s.planned = hit.size() * config.pageSize();
    // Per request, count only positions it never had: a re-admission after a preemption that
    // finds its own pages again reused them, but they were computed for it (the engine-wide
    // counters below count them).
    s.cachedTokens += Math.max(0, s.planned - s.reached);
    s.reached = Math.max(s.reached, s.planned);
    admittedTokens += s.length();
    cachedTokens += s.planned;
    return true;
  }

  /** The cached pages a sequence may start with: never its last token, so it has one to run. */
  private List<RadixCache.Node> matchPrefix(Sequence s) {
    if (radix == null) {
      return List.of();
    }
    return radix.match(s::token, s.length(), (s.length() - 1) / config.pageSize());
  }

  /** LPM: requests passed over too often first, then the longest cached prefix, then arrival. */
  private void orderByCachedPrefix() {
    List<Sequence> list = new ArrayList<>(waiting);
    java.util.Map<Sequence, Integer> hits = new java.util.IdentityHashMap<>();
    for (Sequence s : list) {
      hits.put(s, radix.peek(s::token, s.length(), (s.length() - 1) / config.pageSize()));
    }
    list.sort(
        java.util.Comparator.<Sequence>comparingInt(
                s -> s.bypassed >= SchedulePolicy.LPM_STARVATION_BOUND ? 0 : 1)
            .thenComparingInt(s -> -hits.get(s))
            .thenComparingLong(s -> s.arrival));
    waiting.clear();
    waiting.addAll(list);
  }

  /**
   * Whether {@code n} blocks are free, evicting unlocked prefix-cache pages when the allocator is
   * short.
   */
  private boolean makeRoom(int n) {
    if (n <= pool.free()) {
      return true;
    }
    if (radix == null) {
      return false;
    }
    radix.evict(n - pool.free());
    return n <= pool.free();
  }

  /** Takes the blocks {@code s}'s cache needs for {@code tokens} positions, if there is room. */
  private boolean reserveEvicting(Sequence s, long tokens) {
    int need = pool.blocksFor(tokens) - s.heldBlocks();
    if (need <= 0) {
      return true;
    }
    if (!makeRoom(need)) {
      return false;
    }
    s.cache.reserve((int) tokens);
    return true;
  }

  /**
   * After a step sampled {@code s}'s next token: the whole pages of the prefill it just finished go
   * to the prefix cache (once per prefill; decode steps add none until the request finishes).
   */
  void cachePrefill(Sequence s) {
    if (!s.prefillCached) {
      s.prefillCached = true;
      cachePages(s);
    }
  }

  /**
   * Hands the whole pages of {@code s}'s cache that the tree lacks to the prefix cache (each a
   * reference on its block, which the sequence keeps too), and the sequence locks them. Only
   * positions whose keys and values are stored count (call between steps).
   */
  void cachePages(Sequence s) {
    if (radix == null || s.cache == null) {
      return;
    }
    int pages = s.cache.length() / config.pageSize();
    RadixCache.Node parent = s.prefixNodes.isEmpty() ? null : s.prefixNodes.getLast();
    for (int p = s.prefixNodes.size(); p < pages; p++) {
      RadixCache.Node n = radix.child(parent, s::token, p);
      if (n == null) {
        n = radix.insert(parent, s::token, p, s.cache.retainPage(p, config.pageSize()));
      }
      // else another request cached the same page first: this one keeps its own copy's block.
      radix.lock(List.of(n));
      s.prefixNodes.add(n);
      parent = n;
    }
  }

  /** Evicts every prefix-cache page no running request uses; returns how many went. */
  int flushCache() {
    return radix == null ? 0 : radix.flush();
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
      // Generated tokens pending (jump-forward) reserve as a decode does: they may preempt.
      n = ahead ? reserveAhead(s, n) : reserve(s, n, pending == 1 || s.generated() > 0);
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
    if (reserveEvicting(s, (long) s.cached() + n)) {
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
      if (reserveEvicting(s, (long) s.cached() + n)) {
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

  /**
   * Reserves the blocks {@code draftTokens} draft tokens after {@code s}'s planned decode token
   * need, from free blocks only (drafts neither evict cached prefixes nor preempt); false (nothing
   * changed) when the pool is short.
   */
  boolean reserveDraft(Sequence s, int draftTokens) {
    int tokens = s.cached() + 1 + draftTokens;
    int need = pool.blocksFor(tokens) - s.heldBlocks();
    if (need > 0) {
      if (need > pool.free()) {
        return false;
      }
      s.cache.reserve(tokens);
    }
    return true;
  }

  /**
   * After a verify step rolled {@code s}'s cache back: returns the blocks beyond those its cache
   * now covers, so rejected drafts hold no blocks.
   */
  void trimBlocks(Sequence s) {
    s.cache.truncateBlocks(s.cached());
  }

  private void preempt(Sequence s) {
    s.reached = Math.max(s.reached, s.cached());
    running.remove(s);
    releaseBlocks(s);
    closeCache(s);
    s.preemptions++;
    preemptions++;
    waiting.addFirst(s);
    queued.incrementAndGet();
  }

  /** Takes a finished or failed request out of the batch; closing its cache frees its blocks. */
  void remove(Sequence s) {
    if (!running.remove(s) && waiting.remove(s)) {
      queued.decrementAndGet();
    }
    releaseBlocks(s);
    closeCache(s);
  }

  /** Unlocks the sequence's prefix-cache pages (its cache's blocks go when the cache closes). */
  private void releaseBlocks(Sequence s) {
    if (radix != null) {
      radix.unlock(s.prefixNodes);
    }
    s.prefixNodes = new ArrayList<>();
    s.prefillCached = false;
  }

  /**
   * Closes the cache: its block references go back to the allocator (a block the prefix cache
   * shares stays until its page is evicted) and the model frees any storage of its own.
   */
  private static void closeCache(Sequence s) {
    if (s.cache != null) {
      s.cache.close();
      s.cache = null;
    }
    s.planned = 0;
    s.awaitingToken = false;
  }
}
