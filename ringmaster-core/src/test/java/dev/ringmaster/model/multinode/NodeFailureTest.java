package dev.ringmaster.model.multinode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Every way a multi-node run can go wrong ends with an error on node 0 that names the node and what
 * happened, quickly, never a hang: a node failing a step, a node vanishing mid-run, a node with
 * another model, an unreachable node 0, a missing node, a node that cannot load.
 */
class NodeFailureTest {
  private static final ParallelConfig TP2 = ParallelConfig.tensor(2);
  private static final AllReduceAlgorithm RING = AllReduceAlgorithm.RING;

  private static Path dir() {
    return GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic")).dir();
  }

  /** What a test does to a node's model at its {@code n}-th forward step. */
  @FunctionalInterface
  interface Sabotage {
    void at(int step, Cluster cluster, LocalNode node);
  }

  /** The CPU backend, with {@code sabotage} run before each of the node's steps. */
  private static NodeBackend sabotaged(Path dir, Sabotage sabotage) {
    CpuNodeBackend cpu = new CpuNodeBackend(dir, TP2, RING);
    return new NodeBackend() {
      @Override
      public int bind(InetAddress local) throws java.io.IOException {
        return cpu.bind(local);
      }

      @Override
      public LocalNode load(Cluster cluster) throws Exception {
        LocalNode real = cpu.load(cluster);
        AtomicInteger steps = new AtomicInteger();
        LanguageModel m = real.model();
        LanguageModel wrapped =
            new ForwardingLanguageModel(m) {
              @Override
              public float[] forward(int[] t, BatchLayout l, KvCache[] c, int[] rows) {
                sabotage.at(steps.incrementAndGet(), cluster, real);
                return super.forward(t, l, c, rows);
              }
            };
        return new LocalNode(wrapped, real.abort(), real.resources());
      }

      @Override
      public String describe() {
        return "sabotaged " + cpu.describe();
      }
    };
  }

  private static void decode(DistributedLm lm, int steps) {
    KvCache c = lm.newCache();
    lm.forwardAll(new int[] {5, 6, 7}, c);
    for (int i = 0; i < steps; i++) {
      lm.forwardAll(new int[] {8 + i}, c);
    }
  }

  /** Two nodes at TP 2: node 0 a plain CPU backend, node 1 {@code node1}. */
  private static TestNodes withNode1(Path dir, NodeBackend node1) throws java.io.IOException {
    return TestNodes.start(
        dir, TP2, RING, 2, k -> k == 0 ? new CpuNodeBackend(dir, TP2, RING) : node1);
  }

  @Test
  void aNodeFailingAStepFailsItOnNodeZeroNamingTheNode() throws Exception {
    Path dir = dir();
    long start = System.nanoTime();
    try (TestNodes nodes =
        withNode1(
            dir,
            sabotaged(
                dir,
                (step, cluster, node) -> {
                  if (step == 4) {
                    throw new IllegalStateException("injected fault on node 1");
                  }
                }))) {
      assertThatThrownBy(() -> decode(nodes.lm, 10))
          .isInstanceOf(NodeFailureException.class)
          .hasMessageContaining("step 4 failed")
          .hasMessageContaining("node 1 at 127.0.0.1:")
          .hasMessageContaining("injected fault on node 1");
      assertThatThrownBy(() -> decode(nodes.lm, 1))
          .isInstanceOf(NodeFailureException.class)
          .hasMessageContaining("unusable after an earlier failure");
      assertThat(nodes.finish()).as("the failed node exits with status 1").containsExactly(1);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void aNodeVanishingMidRunIsReportedAsDisconnected() throws Exception {
    Path dir = dir();
    long start = System.nanoTime();
    try (TestNodes nodes =
        withNode1(
            dir,
            sabotaged(
                dir,
                (step, cluster, node) -> {
                  if (step == 3) {
                    // As if the process died: every socket closes at once.
                    cluster.close();
                    node.abort().accept(new IllegalStateException("killed"));
                  }
                }))) {
      assertThatThrownBy(() -> decode(nodes.lm, 10))
          .isInstanceOf(NodeFailureException.class)
          .hasMessageContaining("step 3 failed")
          .hasMessageContaining("node 1 at 127.0.0.1:")
          .hasMessageContaining("disconnected");
      Future<Integer> follower = nodes.followers.getFirst();
      assertThatThrownBy(() -> follower.get(20, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasCauseInstanceOf(NodeFailureException.class);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
  }

  @Test
  void badInputFailsOnNodeZeroAloneAndTheRunGoesOn() throws Exception {
    try (TestNodes nodes = TestNodes.cpu(dir(), TP2, RING, 2)) {
      KvCache c = nodes.lm.newCache();
      assertThatThrownBy(() -> nodes.lm.forwardAll(new int[] {5, 100_000}, c))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("outside the vocabulary");
      decode(nodes.lm, 3);
      assertThat(nodes.finish()).containsOnly(0);
    }
  }

  @Test
  void aNodeWithAnotherModelIsRefusedNamingTheDifference() throws Exception {
    Path mine = dir();
    Path other = RepoPaths.require("fixtures/golden/deepseek_v2_basic");
    int port = TestNodes.freePort();
    Duration t = Duration.ofSeconds(20);
    var pool = Executors.newSingleThreadExecutor();
    try {
      Future<Integer> follower =
          pool.submit(
              () ->
                  FollowerNode.serve(
                      TestNodes.layout(2, 1, port, t),
                      TestNodes.fingerprint(other, TP2, RING),
                      new CpuNodeBackend(other, TP2, RING),
                      TestNodes.QUIET));
      assertThatThrownBy(
              () ->
                  DistributedLm.lead(
                      TestNodes.layout(2, 0, port, t),
                      TestNodes.fingerprint(mine, TP2, RING),
                      new CpuNodeBackend(mine, TP2, RING),
                      TestNodes.QUIET))
          .isInstanceOf(NodeFailureException.class)
          .hasMessageContaining("node 1 runs a different model or settings than node 0")
          .hasMessageContaining("model config.json (sha-256)");
      assertThatThrownBy(() -> follower.get(20, TimeUnit.SECONDS))
          .hasCauseInstanceOf(NodeFailureException.class)
          .cause()
          .hasMessageContaining("node 0 refused this node")
          .hasMessageContaining("model config.json (sha-256)");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void differentFlagsAreNamedWithBothValues() {
    Map<String, String> a = Map.of("--tp-size", "2", "--allreduce", "RING");
    Map<String, String> b = Map.of("--tp-size", "4", "--allreduce", "RING");
    assertThat(Fingerprint.differences(a, b, 3))
        .containsExactly("--tp-size: 2 on node 0, 4 on node 3");
  }

  @Test
  void anUnreachableNodeZeroTimesOutNamingTheAddress() throws Exception {
    int port = TestNodes.freePort();
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                FollowerNode.serve(
                    TestNodes.layout(2, 1, port, Duration.ofSeconds(1)),
                    Map.of(),
                    new CpuNodeBackend(dir(), TP2, RING),
                    TestNodes.QUIET))
        .isInstanceOf(NodeFailureException.class)
        .hasMessageContaining("could not reach node 0 at 127.0.0.1:" + port + " within 1 s");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void aMissingNodeIsNamedWhenTheTimeoutPasses() throws Exception {
    Path dir = dir();
    int port = TestNodes.freePort();
    Duration t = Duration.ofSeconds(1);
    var pool = Executors.newSingleThreadExecutor();
    try {
      Map<String, String> print = TestNodes.fingerprint(dir, ParallelConfig.tensor(3), RING);
      Future<Integer> node1 =
          pool.submit(
              () ->
                  FollowerNode.serve(
                      TestNodes.layout(3, 1, port, Duration.ofSeconds(20)),
                      print,
                      new CpuNodeBackend(dir, ParallelConfig.tensor(3), RING),
                      TestNodes.QUIET));
      assertThatThrownBy(
              () ->
                  DistributedLm.lead(
                      TestNodes.layout(3, 0, port, t),
                      print,
                      new CpuNodeBackend(dir, ParallelConfig.tensor(3), RING),
                      TestNodes.QUIET))
          .isInstanceOf(NodeFailureException.class)
          .hasMessageContaining("only 2 of 3 nodes arrived within 1 s; missing node ranks [2]");
      assertThatThrownBy(() -> node1.get(20, TimeUnit.SECONDS))
          .hasCauseInstanceOf(NodeFailureException.class);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aNodeThatCannotLoadStopsTheRunNamingIt() throws Exception {
    Path dir = dir();
    long start = System.nanoTime();
    NodeBackend broken =
        new NodeBackend() {
          @Override
          public int bind(InetAddress local) {
            return 0;
          }

          @Override
          public LocalNode load(Cluster cluster) {
            throw new IllegalStateException("out of memory on node 1");
          }

          @Override
          public String describe() {
            return "a backend that cannot load";
          }
        };
    assertThatThrownBy(() -> withNode1(dir, broken))
        .isInstanceOf(NodeFailureException.class)
        .hasMessageContaining("node 1 at 127.0.0.1:")
        .hasMessageContaining("failed to load the model")
        .hasMessageContaining("out of memory on node 1");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
  }
}
