package dev.ringmaster.model.multinode;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.io.IOException;
import java.io.PrintStream;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * A node other than 0: meets node 0, loads its ranks, then runs every step node 0 sends on them, in
 * order, until node 0 shuts down. Its caches and shared KV pages mirror node 0's by id ({@link
 * CacheMirror}); every answer says how many of each it holds.
 */
public final class FollowerNode {
  private final Cluster cluster;
  private final LocalNode local;
  private final ControlChannel leader;
  private final CacheMirror mirror;
  private boolean failed;
  private int leftCaches;
  private int leftPages;

  private FollowerNode(Cluster cluster, LocalNode local) {
    this.cluster = cluster;
    this.local = local;
    this.leader = cluster.leader();
    this.mirror = new CacheMirror(local.model());
  }

  /**
   * Serves node 0 until it shuts the run down; returns 0, or 1 when some step failed here.
   *
   * @param log where the node says what it does
   * @throws NodeFailureException when node 0 cannot be reached, refuses this node, stops the run,
   *     or goes away without shutting down
   */
  public static int serve(
      NodeLayout layout, Map<String, String> fingerprint, NodeBackend backend, PrintStream log) {
    if (layout.leader()) {
      throw new IllegalArgumentException("node 0 leads; it does not follow");
    }
    Cluster cluster = Cluster.form(layout, fingerprint, backend);
    String me = "node " + layout.nodeRank() + " of " + layout.nnodes();
    log.printf("%s: serving node 0 at %s; loading %s%n", me, layout.address(), backend.describe());
    Loading loading = new Loading(backend, cluster);
    CompletableFuture<ControlChannel.Message> next =
        Loading.next(cluster.leader(), "ringmaster-node0-control");
    Loading.awaitEither(loading.future(), next);
    if (!loading.future().isDone()) {
      // Node 0 spoke (or vanished) before this node was ready: the run is off.
      loading.abandon();
      cluster.close();
      throw stopped(layout, next);
    }
    LocalNode local;
    try {
      local = loading.future().join();
    } catch (CompletionException e) {
      Throwable cause = NodeFailures.unwrap(e);
      try {
        cluster
            .leader()
            .send(
                ControlChannel.READY,
                ControlChannel.payload(
                    out -> {
                      out.writeBoolean(false);
                      ControlChannel.writeString(out, NodeFailures.describe(cause));
                    }));
      } catch (IOException ignored) {
        // node 0 is gone too; the error below says what failed here
      }
      cluster.close();
      throw new NodeFailureException(
          me + " failed to load its ranks: " + NodeFailures.describe(cause), cause);
    }
    try (cluster;
        local) {
      long capacity = local.model().kvCapacityTokens().orElse(-1);
      try {
        cluster
            .leader()
            .send(
                ControlChannel.READY,
                ControlChannel.payload(
                    out -> {
                      out.writeBoolean(true);
                      out.writeLong(capacity);
                    }));
      } catch (IOException e) {
        throw new NodeFailureException(
            "node 0 at " + layout.address() + " went away before the run started: " + e, e);
      }
      try {
        next.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new NodeFailureException("interrupted while waiting for node 0", e);
      } catch (ExecutionException e) {
        // reported by stopped() below
      }
      ControlChannel.Message m = next.getNow(null);
      if (m == null || m.type() != ControlChannel.START) {
        throw stopped(layout, next);
      }
      log.printf("%s: ready%n", me);
      FollowerNode node = new FollowerNode(cluster, local);
      int status = node.loop();
      log.printf(
          "%s: node 0 finished; exiting (it left %d caches and %d KV pages open here)%n",
          me, node.leftCaches, node.leftPages);
      return status;
    }
  }

  /** Why node 0's message (ABORT, or none: it vanished) means this node stops. */
  private static NodeFailureException stopped(
      NodeLayout layout, CompletableFuture<ControlChannel.Message> next) {
    ControlChannel.Message m;
    try {
      m = next.join();
    } catch (CompletionException e) {
      return new NodeFailureException(
          "node 0 at "
              + layout.address()
              + " went away before the run started: "
              + NodeFailures.describe(NodeFailures.unwrap(e)),
          NodeFailures.unwrap(e));
    }
    if (m.type() == ControlChannel.ABORT) {
      try {
        return new NodeFailureException(
            "node 0 stopped the run: " + ControlChannel.readString(m.data()));
      } catch (IOException e) {
        return new NodeFailureException("node 0 stopped the run", e);
      }
    }
    return new NodeFailureException("unexpected message " + m.type() + " from node 0");
  }

  private int loop() {
    NodeLayout layout = cluster.layout();
    try {
      while (true) {
        ControlChannel.Message m;
        try {
          m = leader.read();
        } catch (IOException e) {
          NodeFailureException gone =
              new NodeFailureException(
                  "node 0 at "
                      + layout.address()
                      + " went away without shutting down ("
                      + ControlChannel.reason(e)
                      + "); node "
                      + layout.nodeRank()
                      + " stops",
                  e);
          local.abort().accept(gone);
          throw gone;
        }
        switch (m.type()) {
          case ControlChannel.STEP -> answer(m.payload());
          case ControlChannel.SHUTDOWN -> {
            leftCaches = mirror.caches();
            leftPages = mirror.pages();
            return failed ? 1 : 0;
          }
          case ControlChannel.ABORT ->
              throw new NodeFailureException(
                  "node 0 stopped the run: " + ControlChannel.readString(m.data()));
          default ->
              throw new NodeFailureException("unexpected message " + m.type() + " from node 0");
        }
      }
    } catch (IOException e) {
      throw new NodeFailureException("bad message from node 0: " + ControlChannel.reason(e), e);
    } finally {
      mirror.close();
    }
  }

  /** Runs one step and tells node 0 how it went. */
  private void answer(byte[] payload) throws IOException {
    StepMessage s = StepMessage.decode(payload);
    String error = null;
    boolean consequence = false;
    try {
      run(s);
    } catch (RuntimeException | Error e) {
      failed = true;
      error = NodeFailures.describe(e);
      consequence = NodeFailures.isConsequence(e);
    }
    String result = error;
    boolean secondary = consequence;
    try {
      leader.send(
          ControlChannel.DONE,
          ControlChannel.payload(
              out -> {
                out.writeLong(s.step());
                out.writeBoolean(result == null);
                if (result != null) {
                  ControlChannel.writeString(out, result);
                  out.writeBoolean(secondary);
                }
                out.writeInt(mirror.caches());
                out.writeInt(mirror.pages());
              }));
    } catch (IOException e) {
      local.abort().accept(e);
      throw new NodeFailureException(
          "node 0 at " + cluster.layout().address() + " went away during step " + s.step(), e);
    }
  }

  private void run(StepMessage s) {
    LanguageModel model = local.model();
    mirror.apply(s.cacheOps());
    if (s.tokens().length == 0) {
      return;
    }
    KvCache[] mine = new KvCache[s.cacheIds().length];
    for (int i = 0; i < mine.length; i++) {
      KvCache c = mirror.cache(s.cacheIds()[i]);
      if (c.length() != s.cacheLengths()[i]) {
        c.setLength(s.cacheLengths()[i]); // node 0 rolled it back
      }
      mine[i] = c;
    }
    BatchLayout layout = new BatchLayout(s.seqStart(), s.positions());
    if (s.greedy()) {
      model.forwardGreedy(s.tokens(), layout, mine, s.logitRows());
    } else {
      model.forward(s.tokens(), layout, mine, s.logitRows());
    }
  }
}
