package dev.ringmaster.parallel.tcp;

import dev.ringmaster.parallel.CollectiveException;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.LocalRanks;
import dev.ringmaster.parallel.LocalWorld;
import dev.ringmaster.parallel.ProcessGroup;
import dev.ringmaster.parallel.WorldFailure;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One node's share of a world of ranks spread over JVMs: its ranks' {@link ProcessGroup}s, talking
 * to every other rank over one TCP socket per pair. Forming it takes two steps, because the nodes
 * first have to learn each other's addresses: {@link #listen} opens this node's listener (its port
 * is what the other nodes need), then {@link #connect} opens the mesh once all addresses are known.
 *
 * <p>If any local rank fails, or a connection breaks, the world is aborted: every socket of this
 * node is closed, so local ranks waiting in a collective wake with a {@link CollectiveException},
 * and so do the other nodes' ranks, which see their connections to this node end. A peer that stays
 * connected but sends nothing fails the wait after {@link TcpWorldConfig#timeout()}.
 */
public final class TcpWorld implements LocalRanks, AutoCloseable {
  /** How long {@link #close} lets queued frames drain before closing the sockets. */
  private static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

  private final TcpWorldConfig config;
  private final int node;
  private final List<InetSocketAddress> nodes;
  private final Link[][] links;
  private final List<ProcessGroup> groups;
  private final AtomicReference<WorldFailure> failure = new AtomicReference<>();

  /** A node's open listener, before the mesh is connected. */
  public static final class Endpoint implements AutoCloseable {
    private final ServerSocket socket;
    private volatile boolean cancelled;

    private Endpoint(ServerSocket socket) {
      this.socket = socket;
    }

    /**
     * Stops a {@link #connect} in progress on this endpoint (another node failed): it throws
     * promptly instead of waiting for ranks that will not come.
     */
    public void cancel() {
      cancelled = true;
      try {
        socket.close();
      } catch (IOException ignored) {
        // closed either way
      }
    }

    /** The bound port. */
    public int port() {
      return socket.getLocalPort();
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  /** Opens this node's listener on {@code bind} at a free port. */
  public static Endpoint listen(InetAddress bind) throws IOException {
    ServerSocket s = new ServerSocket();
    try {
      s.bind(new InetSocketAddress(bind, 0), 64);
    } catch (IOException e) {
      s.close();
      throw new IOException("cannot listen on " + bind.getHostAddress() + ": " + e.getMessage(), e);
    }
    return new Endpoint(s);
  }

  /**
   * Connects this node's ranks to every other rank and returns the world; closes {@code endpoint}.
   * Every node calls this with the same {@code config}, {@code nodes} and {@code session}.
   *
   * @param node this node, 0 to nnodes-1
   * @param nodes every node's listener address, by node
   * @param session an id shared by the nodes of this run (stray connections of another run are
   *     refused)
   * @throws IOException when the mesh is not complete within the config's timeout; the message
   *     names the unreachable address or the missing pairs
   */
  public static TcpWorld connect(
      Endpoint endpoint,
      TcpWorldConfig config,
      int node,
      List<InetSocketAddress> nodes,
      long session)
      throws IOException {
    if (node < 0 || node >= config.nnodes() || nodes.size() != config.nnodes()) {
      throw new IllegalArgumentException(
          "node "
              + node
              + " with "
              + nodes.size()
              + " addresses for "
              + config.nnodes()
              + " nodes");
    }
    Socket[][] sockets;
    try (endpoint) {
      sockets =
          TcpMesh.open(
              endpoint.socket,
              config,
              node,
              nodes,
              session,
              TcpMesh.deadline(config.timeout()),
              () -> endpoint.cancelled);
    }
    return new TcpWorld(config, node, List.copyOf(nodes), sockets);
  }

  private TcpWorld(
      TcpWorldConfig config, int node, List<InetSocketAddress> nodes, Socket[][] sockets)
      throws IOException {
    this.config = config;
    this.node = node;
    this.nodes = nodes;
    int local = config.localSize();
    this.links = new Link[local][config.worldSize()];
    try {
      for (int i = 0; i < local; i++) {
        int rank = firstRank() + i;
        for (int p = 0; p < config.worldSize(); p++) {
          if (sockets[i][p] != null) {
            int peer = p;
            links[i][p] =
                new Link(
                    rank,
                    p,
                    sockets[i][p],
                    config.timeout(),
                    e ->
                        abort(
                            rank,
                            // Worded as a failed read is, so whichever end notices first
                            // reports the same fact.
                            new CollectiveException(
                                "rank "
                                    + rank
                                    + ": lost the connection to rank "
                                    + peer
                                    + " ("
                                    + describeNode(peer)
                                    + ") while sending: "
                                    + e.getMessage(),
                                e)));
          }
        }
      }
    } catch (IOException e) {
      abortLinks();
      TcpMesh.closeAll(sockets);
      throw e;
    }
    List<ProcessGroup> g = new ArrayList<>(local);
    for (int i = 0; i < local; i++) {
      g.add(new TcpProcessGroup(this, firstRank() + i, links[i], config));
    }
    this.groups = List.copyOf(g);
  }

  /** The settings. */
  public TcpWorldConfig config() {
    return config;
  }

  /** This node. */
  public int node() {
    return node;
  }

  /** The first global rank on this node. */
  public int firstRank() {
    return node * config.localSize();
  }

  /** "node k at host:port", for messages about {@code rank}. */
  String describeNode(int rank) {
    int k = config.nodeOf(rank);
    return k == node
        ? "node " + k + ", this node"
        : "node " + k + " at " + Sockets.format(nodes.get(k));
  }

  @Override
  public List<ProcessGroup> groups() {
    return groups;
  }

  /** Runs {@code task} on every local rank (see {@link #call}). */
  public void run(LocalWorld.RankTask task) {
    call(
        g -> {
          task.run(g);
          return null;
        });
  }

  @Override
  public <T> List<T> call(LocalWorld.RankFunction<T> fn) {
    int n = groups.size();
    Object[] results = new Object[n];
    Throwable[] errors = new Throwable[n];
    Thread[] threads = new Thread[n];
    for (int i = 0; i < n; i++) {
      int local = i;
      ProcessGroup g = groups.get(i);
      threads[i] =
          Thread.ofPlatform()
              .name("ringmaster-rank-" + g.rank())
              .start(
                  () -> {
                    try {
                      results[local] = fn.apply(g);
                    } catch (Throwable t) {
                      errors[local] = t;
                      abort(g.rank(), t);
                    }
                  });
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        abort(-1, e);
        Thread.currentThread().interrupt();
        for (Thread u : threads) {
          try {
            u.join();
          } catch (InterruptedException again) {
            break;
          }
        }
        throw new CollectiveException("interrupted while waiting for ranks", e);
      }
    }
    return WorldFailure.resultsOrThrow(results, errors, failure.get());
  }

  /**
   * Aborts the world: closes every socket of this node at once, so local ranks blocked in a read
   * wake, and so do the peers of other nodes. The first abort's cause is kept.
   */
  @Override
  public void abort(int rank, Throwable cause) {
    if (failure.compareAndSet(null, new WorldFailure(rank, cause))) {
      abortLinks();
    }
  }

  private void abortLinks() {
    for (Link[] row : links) {
      for (Link l : row) {
        if (l != null) {
          l.abort();
        }
      }
    }
  }

  /** Whether the world has been aborted. */
  public boolean isAborted() {
    return failure.get() != null;
  }

  /** The exception a collective throws once the world is aborted; null while it is not. */
  CollectiveException abortedException(int rank, CollectiveOp op) {
    WorldFailure f = failure.get();
    if (f == null) {
      return null;
    }
    String who =
        f.rank() < 0 ? "an outside caller" : f.rank() == rank ? "this rank" : "rank " + f.rank();
    return new CollectiveException(
        "rank " + rank + ": " + op + " aborted because " + who + " failed: " + f.cause(),
        f.cause());
  }

  /**
   * Closes the sockets after letting queued frames drain (peers may still be receiving the end of
   * the last collective). Call it when no collective is running.
   */
  @Override
  public void close() {
    failure.compareAndSet(
        null, new WorldFailure(-1, new IllegalStateException("the world was closed")));
    for (Link[] row : links) {
      for (Link l : row) {
        if (l != null) {
          l.close(CLOSE_GRACE);
        }
      }
    }
  }
}
