package dev.ringmaster.model.multinode;

import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * A multi-node run inside one test JVM: node 0 in the calling thread, every other node on its own
 * thread, each with its own control connection, data-plane listener and TCP sockets on loopback.
 */
final class TestNodes implements AutoCloseable {
  static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

  final DistributedLm lm;
  final List<Future<Integer>> followers;
  private final ExecutorService pool;

  private TestNodes(DistributedLm lm, List<Future<Integer>> followers, ExecutorService pool) {
    this.lm = lm;
    this.followers = followers;
    this.pool = pool;
  }

  /** The settings every node of a test run agrees on. */
  static Map<String, String> fingerprint(Path dir, ParallelConfig p, AllReduceAlgorithm a) {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("--tp-size", String.valueOf(p.tpSize()));
    s.put("--ep-size", String.valueOf(p.epSize()));
    s.put("--moe-a2a-backend", p.a2a().toString());
    s.put("--allreduce", a.toString());
    return Fingerprint.of(dir, s);
  }

  static NodeLayout layout(int nnodes, int node, int port, Duration timeout) {
    return new NodeLayout(nnodes, node, "127.0.0.1", port, timeout);
  }

  /** A port nobody listens on right now. */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Starts {@code nnodes} nodes running {@code dir} as {@code p}, every node's backend given. */
  static TestNodes start(
      Path dir,
      ParallelConfig p,
      AllReduceAlgorithm a,
      int nnodes,
      IntFunction<NodeBackend> backend)
      throws IOException {
    int port = freePort();
    Map<String, String> print = fingerprint(dir, p, a);
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, nnodes - 1));
    List<Future<Integer>> followers = new ArrayList<>();
    for (int k = 1; k < nnodes; k++) {
      int node = k;
      followers.add(
          pool.submit(
              () ->
                  FollowerNode.serve(
                      layout(nnodes, node, port, Duration.ofSeconds(20)),
                      print,
                      backend.apply(node),
                      QUIET)));
    }
    try {
      DistributedLm lm =
          DistributedLm.lead(
              layout(nnodes, 0, port, Duration.ofSeconds(20)), print, backend.apply(0), QUIET);
      return new TestNodes(lm, followers, pool);
    } catch (RuntimeException e) {
      pool.shutdownNow();
      throw e;
    }
  }

  /** Starts CPU nodes. */
  static TestNodes cpu(Path dir, ParallelConfig p, AllReduceAlgorithm a, int nnodes)
      throws IOException {
    return start(dir, p, a, nnodes, k -> new CpuNodeBackend(dir, p, a));
  }

  /** Closes node 0 and returns every other node's exit status. */
  List<Integer> finish() throws Exception {
    lm.close();
    List<Integer> status = new ArrayList<>();
    for (Future<Integer> f : followers) {
      status.add(f.get(20, TimeUnit.SECONDS));
    }
    pool.shutdown();
    return status;
  }

  @Override
  public void close() {
    try {
      lm.close();
    } catch (RuntimeException ignored) {
      // already closed by finish(), or the test's failure is the interesting one
    }
    pool.shutdownNow();
  }
}
