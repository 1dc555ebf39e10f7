package dev.ringmaster.sim.serve;

import dev.ringmaster.tools.benchserve.Percentiles;
import dev.ringmaster.tools.benchserve.PoissonArrivals;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The engine's scheduler replayed at token granularity ({@code Scheduler} in the engine): requests
 * are admitted first come, first served while fewer than the running limit run and the pool can
 * hold the whole uncached prompt; each step runs one token of every decoding request and up to the
 * prefill chunk of prompt tokens, oldest request first; a decode that finds the pool full first
 * evicts unused prefix-cache pages, then preempts the most recently admitted request (its tokens
 * recomputed when it is admitted again). With the radix cache a group's shared prefix, in whole
 * pages, is cached once a request of the group has prefilled it. The client sends requests as bench
 * serve does: at its Poisson arrival times, at most {@code maxConcurrency} in flight. A request
 * joins the first step planned after it reached the engine: with the overlap schedule a step is
 * planned while the one before runs, so one arriving during a step joins the step after next; an
 * idle engine starts a step with the first request of a burst alone ({@code BatchEngine}'s loop).
 */
final class ServeScheduler {
  private final ServeWorkload w;
  private final ServeOptions opts;
  private final long pool;
  private final int maxRunning;
  private final int graphMax;
  private final int chunk;

  private final List<Req> running = new ArrayList<>();
  private final Deque<Req> waiting = new ArrayDeque<>();
  private final Map<Integer, Integer> tree = new HashMap<>();
  private final Map<Integer, Integer> treeUsers = new HashMap<>();
  private long used;
  private long admissions;
  private long preemptions;
  private long promptTokens;
  private long cachedTokens;

  ServeScheduler(
      ServeWorkload w, ServeOptions opts, long pool, int maxRunning, int graphMax, int chunk) {
    this.w = w;
    this.opts = opts;
    this.pool = pool;
    this.maxRunning = maxRunning;
    this.graphMax = graphMax;
    this.chunk = chunk;
  }

  /** A report for a workload that cannot run. */
  static ServeReport doesNotRun(long pool, int maxRunning, String why) {
    return new ServeReport(
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        pool,
        maxRunning,
        0,
        0,
        0,
        0,
        0,
        List.of(why),
        List.of());
  }

  private static final class Req {
    final int group;
    final int prompt;
    final int output;
    double sent;
    double admitted = -1;
    double firstToken;
    double lastToken;
    int target;
    int computed;
    int generated;
    long held;
    long order;
    boolean usesTree;
    boolean prefixDone;

    Req(int group, int prompt, int output) {
      this.group = group;
      this.prompt = prompt;
      this.output = output;
      this.target = prompt;
    }
  }

  /**
   * Admits {@code r} at {@code t} if the running batch and the pool have room for its uncached
   * prompt; false (nothing changed) otherwise. The caller takes it off the waiting queue.
   */
  private boolean admit(Req r, double t, List<Double> queue) {
    if (running.size() >= maxRunning) {
      return false;
    }
    int cached = cachedPrefix(r);
    long need = r.target - cached;
    if (!reserve(need)) {
      return false;
    }
    r.held = need;
    r.computed = cached;
    r.order = admissions++;
    if (r.admitted < 0) {
      r.admitted = t;
      queue.add((t - r.sent) * 1000);
      promptTokens += r.prompt;
      cachedTokens += cached;
    }
    if (cached > 0) {
      lockTree(r);
    }
    running.add(r);
    return true;
  }

  /** Runs the workload to its last token with {@code costs} as the step times. */
  ServeReport run(StepCosts costs) {
    int n = w.numPrompts();
    List<Integer> groups = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      groups.add(i / w.promptsPerGroup());
    }
    Random random = new Random(w.seed());
    if (w.sharedPrefixLen() > 0) {
      Collections.shuffle(groups, random);
    }
    double[] scheduled = new double[n];
    PoissonArrivals gaps = new PoissonArrivals(w.requestRate(), w.seed());
    for (int i = 1; i < n; i++) {
      scheduled[i] = scheduled[i - 1] + gaps.nextGapSeconds();
    }
    int limit = w.maxConcurrency() == 0 ? Integer.MAX_VALUE : w.maxConcurrency();
    List<Double> ttft = new ArrayList<>();
    List<Double> itl = new ArrayList<>();
    List<Double> tpot = new ArrayList<>();
    List<Double> queue = new ArrayList<>();
    double t = 0;
    double stepStart = 0;
    double slotFreed = 0;
    double runningTime = 0;
    int next = 0;
    int inFlight = 0;
    int completed = 0;
    int peakRunning = 0;
    int peakWaiting = 0;
    while (completed < n) {
      while (next < n && inFlight < limit && scheduled[next] <= t) {
        Req r = new Req(groups.get(next), w.inputLen(), w.outputLen());
        r.sent = Math.max(scheduled[next], slotFreed);
        waiting.addLast(r);
        next++;
        inFlight++;
      }
      // The coming step's plan sees the requests that had reached the engine when it was made:
      // with the overlap schedule, while the previous step ran (just after its launch) if any
      // request ran on; else now. A request sent at this very moment is still on its way.
      double seen = opts.overlapSchedule() && !running.isEmpty() ? stepStart : t;
      while (!waiting.isEmpty()
          && running.size() < maxRunning
          && waiting.peekFirst().sent < seen
          && admit(waiting.peekFirst(), t, queue)) {
        waiting.removeFirst();
      }
      // An idle engine launches a step as soon as the first request reaches it (its blocking
      // poll); the rest of a burst arrives meanwhile and joins a later step.
      if (running.isEmpty() && !waiting.isEmpty() && admit(waiting.peekFirst(), t, queue)) {
        waiting.removeFirst();
      }
      peakWaiting = Math.max(peakWaiting, waiting.size());
      peakRunning = Math.max(peakRunning, running.size());
      if (running.isEmpty()) {
        if (next >= n) {
          throw new IllegalStateException(
              waiting.size() + " requests wait with nothing running and none left to send");
        }
        // idle until the next request is sent
        t = Math.max(t, scheduled[next]);
        continue;
      }
      List<Req> decodes = new ArrayList<>();
      List<Req> prefills = new ArrayList<>();
      List<Integer> chunks = new ArrayList<>();
      int budget = chunk;
      for (int i = 0; i < running.size(); i++) {
        Req r = running.get(i);
        if (r.computed == r.target) {
          if (!reserve(1)) {
            Req victim = preemptNewest();
            if (victim == r) {
              i--;
              continue;
            }
            if (!reserve(1)) {
              i--;
              continue;
            }
          }
          r.held++;
          decodes.add(r);
        } else if (budget > 0) {
          int c = Math.min(r.target - r.computed, budget);
          budget -= c;
          prefills.add(r);
          chunks.add(c);
        }
      }
      if (decodes.isEmpty() && prefills.isEmpty()) {
        continue;
      }
      int decodeCtx = (int) decodes.stream().mapToInt(r -> r.computed).average().orElse(0);
      int prefillTokens = chunks.stream().mapToInt(Integer::intValue).sum();
      int prefillStart = (int) prefills.stream().mapToInt(r -> r.computed).average().orElse(0);
      double dt =
          costs.stepUs(
                  decodes.size(),
                  decodeCtx,
                  prefillTokens,
                  prefills.size(),
                  prefillStart,
                  graphMax > 0 && decodes.size() <= graphMax)
              / 1e6;
      runningTime += dt * running.size();
      stepStart = t;
      t += dt;
      List<Req> done = new ArrayList<>();
      for (Req r : decodes) {
        r.computed++;
        r.target++;
        r.generated++;
        itl.add((t - r.lastToken) * 1000);
        r.lastToken = t;
        if (r.generated >= r.output) {
          done.add(r);
        }
      }
      for (int i = 0; i < prefills.size(); i++) {
        Req r = prefills.get(i);
        r.computed += chunks.get(i);
        if (r.computed < r.target) {
          continue;
        }
        if (!r.prefixDone) {
          r.prefixDone = true;
          insertPrefix(r);
        }
        if (r.generated == 0) {
          ttft.add((t - r.sent) * 1000);
          r.firstToken = t;
        } else {
          itl.add((t - r.lastToken) * 1000);
        }
        r.generated++;
        r.lastToken = t;
        if (r.generated >= r.output) {
          done.add(r);
        }
      }
      for (Req r : done) {
        if (r.generated > 1) {
          tpot.add((r.lastToken - r.firstToken) * 1000 / (r.generated - 1));
        }
        release(r);
        running.remove(r);
        completed++;
        inFlight--;
        slotFreed = t;
      }
    }
    return report(
        t,
        completed,
        ttft,
        itl,
        tpot,
        queue,
        runningTime,
        peakRunning,
        peakWaiting,
        promptTokens,
        cachedTokens);
  }

  private ServeReport report(
      double t,
      int completed,
      List<Double> ttft,
      List<Double> itl,
      List<Double> tpot,
      List<Double> queue,
      double runningTime,
      int peakRunning,
      int peakWaiting,
      long promptTokens,
      long cachedTokens) {
    Percentiles tt = new Percentiles(ttft.stream().mapToDouble(Double::doubleValue).toArray());
    Percentiles it = new Percentiles(itl.stream().mapToDouble(Double::doubleValue).toArray());
    Percentiles tp = new Percentiles(tpot.stream().mapToDouble(Double::doubleValue).toArray());
    double meanQueue = queue.stream().mapToDouble(Double::doubleValue).average().orElse(0);
    List<String> notes = new ArrayList<>();
    int concurrency = w.maxConcurrency() == 0 ? w.numPrompts() : w.maxConcurrency();
    if (peakWaiting > 0 && concurrency > peakRunning) {
      notes.add(
          String.format(
              "at most %d requests ran at once (running limit %d, KV cache %d tokens = %d"
                  + " requests of %d tokens): up to %d of the %d in flight queued, %.0f ms on"
                  + " average before admission",
              peakRunning,
              maxRunning,
              pool,
              pool / (w.inputLen() + w.outputLen()),
              w.inputLen() + w.outputLen(),
              peakWaiting,
              concurrency,
              meanQueue));
    }
    if (preemptions > 0) {
      notes.add(
          preemptions
              + " preemptions: the KV cache filled as sequences grew, and the newest requests were"
              + " recomputed");
    }
    return new ServeReport(
        t,
        completed,
        (double) completed * w.outputLen() / t,
        completed / t,
        tt.median(),
        tt.mean(),
        tt.percentile(99),
        it.median(),
        it.mean(),
        tp.median(),
        tp.mean(),
        meanQueue,
        pool,
        maxRunning,
        peakRunning,
        runningTime / t,
        peakWaiting,
        preemptions,
        promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens,
        List.of(),
        List.copyOf(notes));
  }

  /** Tokens of {@code r}'s prompt the prefix cache holds: whole pages, never its last token. */
  private int cachedPrefix(Req r) {
    if (!opts.radixCache() || !tree.containsKey(r.group)) {
      return 0;
    }
    int page = opts.pageSize();
    return Math.min(tree.get(r.group), (r.target - 1) / page * page);
  }

  private int sharedPages() {
    return w.sharedPrefixLen() / opts.pageSize() * opts.pageSize();
  }

  /** Hands the group's shared prefix to the tree once prefilled (the first request's blocks). */
  private void insertPrefix(Req r) {
    int pages = sharedPages();
    if (!opts.radixCache() || pages == 0 || tree.containsKey(r.group) || r.held < pages) {
      return;
    }
    tree.put(r.group, pages);
    r.held -= pages;
    lockTree(r);
  }

  private void lockTree(Req r) {
    if (!r.usesTree) {
      r.usesTree = true;
      treeUsers.merge(r.group, 1, Integer::sum);
    }
  }

  private void release(Req r) {
    used -= r.held;
    r.held = 0;
    if (r.usesTree) {
      r.usesTree = false;
      treeUsers.merge(r.group, -1, Integer::sum);
    }
  }

  /** Reserves {@code n} tokens, evicting prefixes no running request uses when short. */
  private boolean reserve(long n) {
    if (pool - used >= n) {
      used += n;
      return true;
    }
    for (Integer g : new ArrayList<>(tree.keySet())) {
      if (treeUsers.getOrDefault(g, 0) == 0) {
        used -= tree.remove(g);
        if (pool - used >= n) {
          used += n;
          return true;
        }
      }
    }
    return false;
  }

  private Req preemptNewest() {
    Req victim = running.getFirst();
    for (Req r : running) {
      if (r.order > victim.order) {
        victim = r;
      }
    }
    release(victim);
    running.remove(victim);
    victim.computed = 0;
    victim.prefixDone = false;
    waiting.addFirst(victim);
    preemptions++;
    return victim;
  }
}
