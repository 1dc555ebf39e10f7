package dev.ringmaster.parallel.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A failing, silent or unreachable rank ends every wait with an error that names it. */
class TcpFailureTest {

  @ParameterizedTest
  @EnumSource(
      value = AllReduceAlgorithm.class,
      names = {"RING", "ONESHOT", "TWOSHOT", "RECURSIVE_DOUBLING"})
  void aFailingRankWakesEveryNodePromptly(AllReduceAlgorithm algorithm) throws Exception {
    TcpWorldConfig cfg = TcpWorldConfig.of(6, 3, algorithm).withTimeout(Duration.ofSeconds(60));
    long start = System.nanoTime();
    try (TcpTestCluster c = TcpTestCluster.start(cfg)) {
      assertThatThrownBy(
              () ->
                  c.run(
                      g -> {
                        float[] buf = new float[1000];
                        for (int i = 0; i < 20; i++) {
                          if (g.rank() == 3 && i == 7) {
                            throw new IllegalStateException("boom on rank 3");
                          }
                          g.allReduce(buf);
                        }
                      }))
          .isInstanceOf(CollectiveException.class)
          .satisfies(e -> assertThat(TcpTestCluster.messages(e)).contains("rank 3"));
      for (TcpWorld w : c.nodes) {
        assertThat(w.isAborted()).as("node %d aborted", w.node()).isTrue();
      }
    }
    // Far below the 60 s timeout: the peers were woken by closed sockets, not by timing out.
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void theNodeOfTheFailingRankReportsIt() throws Exception {
    TcpWorldConfig cfg = TcpWorldConfig.of(4, 2, AllReduceAlgorithm.RING);
    try (TcpTestCluster c = TcpTestCluster.start(cfg)) {
      Throwable onNode1 =
          catchOnNode(
              c,
              1,
              g -> {
                if (g.rank() == 2) {
                  throw new IllegalStateException("boom on rank 2");
                }
                g.allReduce(new float[10]);
              });
      assertThat(onNode1)
          .isInstanceOf(CollectiveException.class)
          .hasMessageContaining("rank 2 failed")
          .hasRootCauseMessage("boom on rank 2");
      Throwable onNode0 = catchOnNode(c, 0, g -> g.allReduce(new float[10]));
      assertThat(TcpTestCluster.messages(onNode0))
          .containsAnyOf("lost the connection to rank 2", "lost the connection to rank 3")
          .contains("node 1 at 127.0.0.1:");
    }
  }

  /** Runs the task on both nodes at once and returns what {@code node} threw. */
  private static Throwable catchOnNode(
      TcpTestCluster c, int node, dev.ringmaster.parallel.LocalWorld.RankTask task)
      throws Exception {
    List<Throwable> errors =
        TcpTestCluster.onEveryNode(
            c.nodes.size(),
            k -> {
              try {
                c.nodes.get(k).run(task);
                return null;
              } catch (CollectiveException e) {
                return e;
              }
            });
    return errors.get(node);
  }

  @Test
  void aSilentRankMakesPeersTimeOutNamingIt() throws Exception {
    TcpWorldConfig cfg =
        TcpWorldConfig.of(4, 4, AllReduceAlgorithm.ONESHOT).withTimeout(Duration.ofMillis(300));
    long start = System.nanoTime();
    try (TcpTestCluster c = TcpTestCluster.start(cfg)) {
      assertThatThrownBy(
              () ->
                  c.run(
                      g -> {
                        if (g.rank() != 3) {
                          g.allReduce(new float[10]);
                        } else {
                          Thread.sleep(1500); // alive but silent
                        }
                      }))
          .satisfies(
              e ->
                  assertThat(TcpTestCluster.messages(e))
                      .contains("timed out after 300 ms in ALL_REDUCE #1 waiting for rank 3")
                      .contains("node 3 at 127.0.0.1:"));
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void ranksCallingDifferentCollectivesFailInsteadOfMixingData() throws Exception {
    try (TcpTestCluster c =
        TcpTestCluster.start(TcpWorldConfig.of(2, 2, AllReduceAlgorithm.ONESHOT))) {
      assertThatThrownBy(
              () ->
                  c.run(
                      g -> {
                        if (g.rank() == 0) {
                          g.allReduce(new float[8]);
                        } else {
                          g.allGather(new float[8], 0, 8, new float[16]);
                        }
                      }))
          .satisfies(
              e -> assertThat(TcpTestCluster.messages(e)).contains("called different collectives"));
    }
  }

  @Test
  void mismatchedLengthsAreNamed() throws Exception {
    try (TcpTestCluster c =
        TcpTestCluster.start(TcpWorldConfig.of(2, 2, AllReduceAlgorithm.ONESHOT))) {
      assertThatThrownBy(() -> c.run(g -> g.allReduce(new float[g.rank() == 0 ? 8 : 9])))
          .satisfies(
              e -> assertThat(TcpTestCluster.messages(e)).contains("lengths differ between ranks"));
    }
  }

  @Test
  void anUnreachableNodeFailsConnectingWithTheAddressAndTheTimeWaited() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    TcpWorldConfig cfg =
        TcpWorldConfig.of(2, 2, AllReduceAlgorithm.RING).withTimeout(Duration.ofSeconds(1));
    TcpWorld.Endpoint mine = TcpWorld.listen(InetAddress.getLoopbackAddress());
    InetSocketAddress dead = new InetSocketAddress("127.0.0.1", closedPort);
    InetSocketAddress self = new InetSocketAddress("127.0.0.1", mine.port());
    long start = System.nanoTime();
    assertThatThrownBy(() -> TcpWorld.connect(mine, cfg, 1, List.of(dead, self), 1L))
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessageContaining("could not reach rank 0 (node 0) at 127.0.0.1:" + closedPort)
        .hasMessageContaining("within 1 s");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void aNodeWhosePeersNeverComeNamesTheMissingPairs() throws IOException {
    TcpWorldConfig cfg =
        TcpWorldConfig.of(2, 2, AllReduceAlgorithm.RING).withTimeout(Duration.ofMillis(500));
    TcpWorld.Endpoint mine = TcpWorld.listen(InetAddress.getLoopbackAddress());
    InetSocketAddress self = new InetSocketAddress("127.0.0.1", mine.port());
    InetSocketAddress other = new InetSocketAddress("127.0.0.1", 9); // never used by node 0
    assertThatThrownBy(() -> TcpWorld.connect(mine, cfg, 0, List.of(self, other), 1L))
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessageContaining("rank 1 (node 1) -> rank 0");
  }
}
