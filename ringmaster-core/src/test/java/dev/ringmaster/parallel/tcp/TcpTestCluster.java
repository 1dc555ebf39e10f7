package dev.ringmaster.parallel.tcp;

import dev.ringmaster.parallel.LocalWorld;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Several nodes of a TCP world inside one test JVM: each node is its own {@link TcpWorld} with its
 * own listener on the loopback interface, connected to the others through real sockets.
 */
final class TcpTestCluster implements AutoCloseable {
  final List<TcpWorld> nodes;

  private TcpTestCluster(List<TcpWorld> nodes) {
    this.nodes = nodes;
  }

  /** Opens every node's listener, then connects all nodes at once. */
  static TcpTestCluster start(TcpWorldConfig cfg) throws Exception {
    InetAddress lo = InetAddress.getLoopbackAddress();
    List<TcpWorld.Endpoint> endpoints = new ArrayList<>();
    List<InetSocketAddress> addresses = new ArrayList<>();
    for (int k = 0; k < cfg.nnodes(); k++) {
      TcpWorld.Endpoint e = TcpWorld.listen(lo);
      endpoints.add(e);
      addresses.add(new InetSocketAddress("127.0.0.1", e.port()));
    }
    return new TcpTestCluster(
        onEveryNode(cfg.nnodes(), k -> TcpWorld.connect(endpoints.get(k), cfg, k, addresses, 42L)));
  }

  /** Work for one node. */
  interface NodeFunction<T> {
    T apply(int node) throws Exception;
  }

  /** Runs {@code fn} for every node on its own thread; rethrows the first failure. */
  static <T> List<T> onEveryNode(int nnodes, NodeFunction<T> fn) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(nnodes);
    try {
      List<Future<T>> fs = new ArrayList<>();
      for (int k = 0; k < nnodes; k++) {
        int node = k;
        fs.add(pool.submit(() -> fn.apply(node)));
      }
      List<T> out = new ArrayList<>();
      Exception first = null;
      for (Future<T> f : fs) {
        try {
          out.add(f.get());
        } catch (ExecutionException e) {
          Exception cause = e.getCause() instanceof Exception c ? c : e;
          if (first == null) {
            first = cause;
          } else {
            first.addSuppressed(cause);
          }
        }
      }
      if (first != null) {
        throw first;
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Runs {@code task} on every rank of every node. */
  void run(LocalWorld.RankTask task) throws Exception {
    onEveryNode(
        nodes.size(),
        k -> {
          nodes.get(k).run(task);
          return null;
        });
  }

  @Override
  public void close() {
    for (TcpWorld w : nodes) {
      w.close();
    }
  }

  /** The first failure's message chain, for assertions. */
  static String messages(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      b.append(c.getMessage()).append(" | ");
    }
    for (Throwable s : t.getSuppressed()) {
      b.append(messages(s));
    }
    return b.toString();
  }
}
