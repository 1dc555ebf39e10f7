package dev.ringmaster.model.multinode;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.CollectiveReporting;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.ranks.FailurePolicy;
import dev.ringmaster.runtime.ranks.RankGroup;
import dev.ringmaster.runtime.ranks.RankWorker;
import dev.ringmaster.runtime.ranks.StepFailure;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Node 0's view of a model spread over several nodes: a {@link LanguageModel} whose every step runs
 * on this node's ranks and, in lock-step, on every other node's. Each step's inputs go to the other
 * nodes over their control connections before this node's ranks start; the step returns when every
 * node has answered. The caches it hands out are node 0's; each carries an id that names the
 * matching cache on the other nodes, which create it on first use and drop it when node 0 closes
 * it. Shared KV pages (the prefix cache's) work the same way: a page retained from a cache,
 * attached to a fresh one or closed here is retained, attached or closed under the same id on every
 * node. These operations travel with the next step, in the order they happened ({@link CacheOps}),
 * so every node's caches follow the same prefix-cache decisions; {@link #syncCaches} sends them at
 * once.
 *
 * <p>The nodes are the ranks of a {@link RankGroup}: rank 0 runs this node's part on a thread of
 * its own, rank {@code k} a thread that sends node {@code k} the step and waits for its answer
 * ({@link FollowerLink}). A failure anywhere fails the step here: a node that reports an error or
 * whose connection drops is named, this node's data plane is aborted so its ranks stop waiting, and
 * every later step throws. {@link #close} stops the other nodes; so does this process exiting,
 * since their control connections then end.
 */
public final class DistributedLm implements LanguageModel, CollectiveReporting {
  /** How long a failed step waits for the other nodes to report before giving up on them. */
  static final Duration FAILURE_GRACE = Duration.ofSeconds(10);

  private final Cluster cluster;
  private final LocalNode local;
  private final long[] capacities;
  private final FollowerLink[] followers;
  private final RankGroup group;
  private final CacheOps ops = new CacheOps();
  private final AtomicInteger openCaches = new AtomicInteger();
  private final Object stepLock = new Object();
  private final PrintStream log;
  private int nextCacheId;
  private long steps;
  private volatile NodeFailureException broken;
  private volatile boolean closing;
  private volatile boolean stuck;

  private DistributedLm(Cluster cluster, LocalNode local, long[] capacities, PrintStream log) {
    this.cluster = cluster;
    this.local = local;
    this.capacities = capacities;
    this.log = log;
    int n = cluster.layout().nnodes();
    this.followers = new FollowerLink[n];
    List<RankWorker> workers = new ArrayList<>();
    workers.add(RankWorker.ownThread("ringmaster-node0-step"));
    for (int k = 1; k < n; k++) {
      followers[k] =
          new FollowerLink(
              k, cluster.describe(k), cluster.follower(k), log, local.abort(), () -> closing);
      workers.add(RankWorker.ownThread("ringmaster-node" + k + "-step"));
    }
    this.group =
        new RankGroup(
            workers,
            new FailurePolicy() {
              @Override
              public void abort(int rank, Throwable cause) {
                local.abort().accept(cause);
              }

              @Override
              public Duration grace() {
                return FAILURE_GRACE;
              }

              @Override
              public RuntimeException report(StepFailure f) {
                return fail(stepFailure(steps, f));
              }
            });
    for (int k = 1; k < n; k++) {
      followers[k].startReading();
    }
  }

  /**
   * Node 0: meets the other nodes, loads this node's ranks, waits until every node has loaded its
   * own, and returns the model that drives them all.
   *
   * @param log where progress and lost nodes are reported
   * @throws NodeFailureException naming the node when one cannot be reached, disagrees, or fails to
   *     load (the others are told to stop)
   */
  public static DistributedLm lead(
      NodeLayout layout, Map<String, String> fingerprint, NodeBackend backend, PrintStream log) {
    if (!layout.leader()) {
      throw new IllegalArgumentException("node " + layout.nodeRank() + " is not node 0");
    }
    Cluster cluster = Cluster.form(layout, fingerprint, backend);
    log.printf(
        "node 0: %d nodes met at %s; loading %s%n",
        layout.nnodes(), layout.address(), backend.describe());
    Loading loading = new Loading(backend, cluster);
    CompletableFuture<Throwable> firstFailure = new CompletableFuture<>();
    loading
        .future()
        .whenComplete(
            (n, e) -> {
              if (e != null) {
                firstFailure.complete(
                    new NodeFailureException(
                        "node 0 failed to load its ranks: "
                            + NodeFailures.describe(NodeFailures.unwrap(e)),
                        NodeFailures.unwrap(e)));
              }
            });
    List<CompletableFuture<Long>> ready = new ArrayList<>();
    for (int k = 1; k < layout.nnodes(); k++) {
      int node = k;
      CompletableFuture<Long> r =
          Loading.next(cluster.follower(k), "ringmaster-node" + k + "-ready")
              .handle((m, e) -> readyCapacity(cluster, node, m, e));
      r.whenComplete(
          (c, e) -> {
            if (e != null) {
              firstFailure.complete(NodeFailures.unwrap(e));
            }
          });
      ready.add(r);
    }
    List<CompletableFuture<?>> everything = new ArrayList<>(ready);
    everything.add(loading.future());
    CompletableFuture<Void> all =
        CompletableFuture.allOf(everything.toArray(CompletableFuture[]::new));
    Loading.awaitEither(all, firstFailure);
    if (!all.isDone() || all.isCompletedExceptionally()) {
      Throwable f = firstFailure.join();
      cluster.abortAll("node 0 stopped the run: " + f.getMessage());
      loading.abandon();
      cluster.close();
      throw f instanceof NodeFailureException n ? n : new NodeFailureException(f.getMessage(), f);
    }
    LocalNode local = loading.future().join();
    long[] capacities = new long[layout.nnodes()];
    capacities[0] = local.model().kvCapacityTokens().orElse(-1);
    try {
      for (int k = 1; k < layout.nnodes(); k++) {
        capacities[k] = ready.get(k - 1).join();
        cluster.follower(k).send(ControlChannel.START);
      }
    } catch (IOException e) {
      cluster.abortAll("node 0 stopped the run: " + e.getMessage());
      cluster.close();
      local.close();
      throw new NodeFailureException("a node went away at start: " + ControlChannel.reason(e), e);
    }
    log.printf("node 0: all %d nodes ready%n", layout.nnodes());
    return new DistributedLm(cluster, local, capacities, log);
  }

  /** Node {@code k}'s READY: its KV capacity, or why it could not load. */
  private static long readyCapacity(
      Cluster cluster, int k, ControlChannel.Message m, Throwable error) {
    if (error != null) {
      throw new NodeFailureException(
          cluster.describe(k)
              + " went away while loading the model: "
              + NodeFailures.describe(NodeFailures.unwrap(error)),
          NodeFailures.unwrap(error));
    }
    try {
      DataInputStream in = m.data();
      if (m.type() != ControlChannel.READY) {
        throw new NodeFailureException(
            cluster.describe(k) + " sent message " + m.type() + " instead of READY");
      }
      if (!in.readBoolean()) {
        throw new NodeFailureException(
            cluster.describe(k) + " failed to load the model: " + ControlChannel.readString(in));
      }
      return in.readLong();
    } catch (IOException e) {
      throw new NodeFailureException(cluster.describe(k) + " sent a bad READY: " + e, e);
    }
  }

  /** The nodes. */
  public int nodes() {
    return followers.length;
  }

  /** This node's ranks as one model. */
  public LanguageModel localModel() {
    return local.model();
  }

  @Override
  public ModelConfig config() {
    return local.model().config();
  }

  @Override
  public long weightBytes() {
    return local.model().weightBytes();
  }

  /** The smallest fixed pool of any node (every node caches every sequence's tokens). */
  @Override
  public OptionalLong kvCapacityTokens() {
    long min = Long.MAX_VALUE;
    for (long c : capacities) {
      if (c >= 0) {
        min = Math.min(min, c);
      }
    }
    return min == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(min);
  }

  /** This node's block size: every node runs the same flags. */
  @Override
  public java.util.OptionalInt kvPageSize() {
    return local.model().kvPageSize();
  }

  /**
   * Whether this node's ranks share pages: every node runs the same backend (the fingerprint checks
   * it), and the other nodes mirror page handles by id.
   */
  @Override
  public boolean sharesKvPages() {
    return local.model().sharesKvPages();
  }

  /** This node's graph sizes: every node runs the same flags (the fingerprint checks them). */
  @Override
  public java.util.List<Integer> decodeGraphBatchSizes() {
    return local.model().decodeGraphBatchSizes();
  }

  @Override
  public KvCache newCache() {
    return NodeCache.open(nextId(), local.model().newCache(), ops, openCaches);
  }

  /**
   * A node-0 cache whose block ids come from {@code blocks} (the scheduler's). The other nodes'
   * mirrors take theirs from their own model's allocator in the same order of operations, so every
   * node's count follows node 0's; block tables never cross the wire, each node's storage is
   * indexed by its own ids.
   */
  @Override
  public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    return NodeCache.open(nextId(), local.model().newCache(blocks), ops, openCaches);
  }

  private synchronized int nextId() {
    return nextCacheId++;
  }

  /**
   * What one node holds of node 0's caches: caches open and shared page handles open.
   *
   * @param node the node's rank
   * @param caches caches it holds
   * @param pages page handles it holds
   */
  public record HeldCaches(int node, int caches, int pages) {}

  /**
   * Sends the cache operations recorded since the last step to every node at once (a step of no
   * tokens) and returns what each node then holds, node 0 first. Call it when no step is running;
   * after every request ended and the prefix cache was flushed, every node should hold nothing.
   */
  public List<HeldCaches> syncCaches() {
    step(
        false,
        new int[0],
        new BatchLayout(new int[] {0}, new int[0]),
        new KvCache[0],
        new int[0],
        c -> null);
    List<HeldCaches> out = new ArrayList<>();
    out.add(new HeldCaches(0, openCaches.get(), ops.openPages()));
    for (int k = 1; k < followers.length; k++) {
      out.add(new HeldCaches(k, followers[k].heldCaches, followers[k].heldPages));
    }
    return out;
  }

  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return step(
        false,
        tokens,
        layout,
        caches,
        logitRows,
        in -> local.model().forward(tokens, layout, in, logitRows));
  }

  @Override
  public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return step(
        true,
        tokens,
        layout,
        caches,
        logitRows,
        in -> local.model().forwardGreedy(tokens, layout, in, logitRows));
  }

  /** This node's part of a step, on its caches. */
  @FunctionalInterface
  private interface LocalStep<T> {
    T run(KvCache[] caches);
  }

  private <T> T step(
      boolean greedy,
      int[] tokens,
      BatchLayout layout,
      KvCache[] caches,
      int[] logitRows,
      LocalStep<T> onThisNode) {
    synchronized (stepLock) {
      NodeFailureException b = broken;
      if (b != null) {
        throw new NodeFailureException(
            "the model spread over "
                + nodes()
                + " nodes is unusable after an earlier failure: "
                + b.getMessage(),
            b);
      }
      for (int k = 1; k < followers.length; k++) {
        if (followers[k].lost != null) {
          throw fail(new NodeFailureException(followers[k].lost));
        }
      }
      NodeCache[] mine = check(tokens, layout, caches, logitRows);
      for (int s = 0; s < layout.numSeqs(); s++) {
        int end = layout.seqStart()[s + 1];
        if (end > layout.seqStart()[s]) {
          // Reserve here first: a full pool then fails before any node has started the step.
          caches[s].ensureCapacity(layout.positions()[end - 1] + 1);
        }
      }
      int[] ids = new int[caches.length];
      int[] lengths = new int[caches.length];
      for (int s = 0; s < caches.length; s++) {
        ids[s] = mine[s].id;
        lengths[s] = caches[s].length();
      }
      int[] cacheOps = ops.drain();
      long stepNo = ++steps;
      byte[] message =
          new StepMessage(
                  stepNo,
                  greedy,
                  tokens,
                  layout.seqStart(),
                  layout.positions(),
                  logitRows,
                  ids,
                  lengths,
                  cacheOps)
              .encode();
      KvCache[] inner = new KvCache[caches.length];
      for (int s = 0; s < caches.length; s++) {
        inner[s] = mine[s].inner;
        inner[s].setLength(lengths[s]); // the engine may have rolled the cache back
      }
      T out =
          group.step(
              k -> {
                if (k == 0) {
                  return onThisNode.run(inner);
                }
                followers[k].runStep(stepNo, message);
                return null;
              });
      for (int s = 0; s < caches.length; s++) {
        caches[s].setLength(inner[s].length());
      }
      return out;
    }
  }

  /**
   * The step failed somewhere (the group has aborted this node's ranks and given every node {@link
   * #FAILURE_GRACE} to report): name the node that failed first, a lost connection before its
   * consequences elsewhere.
   */
  private NodeFailureException stepFailure(long stepNo, StepFailure f) {
    // A backend that cannot interrupt a collective (NCCL) may leave this node's ranks waiting.
    stuck = f.unfinished(0);
    Throwable mine = f.errors()[0] == null ? null : NodeFailures.unwrap(f.errors()[0]);
    Throwable cause =
        f.firstRank() == 0
            ? new NodeFailureException("node 0 failed: " + NodeFailures.describe(mine), mine)
            : f.first();
    // The most telling account first: a node that vanished, then a fault that is not just a
    // collective broken by another node's failure, then whatever was reported first.
    Throwable primary = null;
    for (int k = 1; k < followers.length && primary == null; k++) {
      if (followers[k].lost != null) {
        primary = new NodeFailureException(followers[k].lost, followers[k].lostCause);
      }
    }
    if (primary == null && mine != null && !NodeFailures.isConsequence(mine)) {
      primary = new NodeFailureException("node 0 failed: " + NodeFailures.describe(mine), mine);
    }
    for (int k = 1; k < followers.length && primary == null; k++) {
      if (followers[k].stepError != null && !followers[k].stepErrorIsConsequence) {
        primary = followers[k].stepError;
      }
    }
    if (primary == null) {
      primary = cause;
    }
    if (primary == null) {
      primary = new NodeFailureException("a node failed without saying why");
    }
    NodeFailureException e =
        new NodeFailureException("step " + stepNo + " failed: " + primary.getMessage(), primary);
    for (int k = 1; k < followers.length; k++) {
      if (followers[k].stepError != null && followers[k].stepError != primary) {
        e.addSuppressed(followers[k].stepError);
      }
    }
    return e;
  }

  private NodeFailureException fail(NodeFailureException e) {
    broken = e;
    return e;
  }

  /** Checks the step on node 0, before anything is sent, so bad input cannot break the nodes. */
  private NodeCache[] check(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    int vocab = config().vocabSize();
    if (tokens.length != layout.numTokens() || caches.length != layout.numSeqs()) {
      throw new IllegalArgumentException(
          tokens.length
              + " tokens and "
              + caches.length
              + " caches for a layout of "
              + layout.numTokens()
              + " tokens in "
              + layout.numSeqs()
              + " sequences");
    }
    for (int id : tokens) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (vocab - 1) + ")");
      }
    }
    for (int r : logitRows) {
      if (r < 0 || r >= tokens.length) {
        throw new IllegalArgumentException("logit row " + r + " outside 0.." + (tokens.length - 1));
      }
    }
    NodeCache[] mine = new NodeCache[caches.length];
    for (int s = 0; s < caches.length; s++) {
      if (!(caches[s].external() instanceof NodeCache nc) || nc.isClosed()) {
        throw new IllegalArgumentException(
            "sequence " + s + ": the cache was not made by this model's newCache(), or is closed");
      }
      mine[s] = nc;
      int start = layout.seqStart()[s];
      if (layout.seqStart()[s + 1] > start && layout.positions()[start] != caches[s].length()) {
        throw new IllegalArgumentException(
            "sequence "
                + s
                + ": new tokens start at position "
                + layout.positions()[start]
                + " but its cache holds "
                + caches[s].length());
      }
    }
    return mine;
  }

  @Override
  public Map<String, Long> collectivesDuring(Runnable step) {
    if (local.model() instanceof CollectiveReporting r) {
      return r.collectivesDuring(step);
    }
    step.run();
    return Map.of();
  }

  /**
   * Stops the other nodes (they close their ranks and exit) and closes this node's ranks. Call it
   * when no step is running. The cache operations not sent yet go first, so a node that exits still
   * holding a cache or page (it says how many) shows a leak rather than a late message.
   */
  @Override
  public void close() {
    synchronized (stepLock) {
      if (broken == null && !closing) {
        try {
          syncCaches();
        } catch (RuntimeException e) {
          log.println("ringmaster: could not send the last cache operations: " + e.getMessage());
        }
      }
      closing = true;
      for (int k = 1; k < followers.length; k++) {
        try {
          followers[k].channel.send(ControlChannel.SHUTDOWN);
        } catch (IOException ignored) {
          // that node is gone already
        }
      }
      cluster.close();
      group.close();
      if (stuck) {
        // Closing would wait for ranks blocked in a collective that will never complete.
        log.println(
            "ringmaster: node 0's ranks are still blocked in the failed step; they end with"
                + " the process");
        return;
      }
      local.close();
    }
  }
}
