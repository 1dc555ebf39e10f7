package dev.ringmaster.cuda.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/** The unique-id handshake between nodes, on loopback with threads as nodes (no GPU needed). */
class UniqueIdExchangeTest {
  /** One thread per simulated node (the common pool may have a single worker on small machines). */
  private static final Executor NODES = Executors.newVirtualThreadPerTaskExecutor();

  private static NcclUniqueId randomId() {
    byte[] b = new byte[NcclUniqueId.BYTES];
    new Random(7).nextBytes(b);
    return new NcclUniqueId(b);
  }

  private static CompletableFuture<UniqueIdExchange.Joined> joinAsync(DistInit d, int gpus) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return UniqueIdExchange.join(d, gpus, Duration.ofSeconds(10));
          } catch (IOException e) {
            throw new RuntimeException(e);
          }
        },
        NODES);
  }

  @Test
  void everyNodeReceivesNodeZerosId() throws Exception {
    NcclUniqueId id = randomId();
    try (UniqueIdExchange.Server server =
        UniqueIdExchange.listen(new InetSocketAddress("127.0.0.1", 0))) {
      List<CompletableFuture<UniqueIdExchange.Joined>> nodes = new ArrayList<>();
      for (int node = 1; node < 3; node++) {
        nodes.add(joinAsync(DistInit.parse(3, node, "127.0.0.1:" + server.port()), 4));
      }
      int world = server.distribute(3, 4, id, Duration.ofSeconds(10));
      assertThat(world).isEqualTo(12);
      for (var f : nodes) {
        assertThat(f.get().id()).isEqualTo(id);
        assertThat(f.get().worldSize()).isEqualTo(12);
      }
    }
  }

  @Test
  void aNodeThatStartsFirstRetriesUntilNodeZeroListens() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort(); // free now; node 0 takes it after node 1 began retrying
    }
    var joined = joinAsync(DistInit.parse(2, 1, "127.0.0.1:" + port), 2);
    Thread.sleep(500);
    try (UniqueIdExchange.Server server =
        UniqueIdExchange.listen(new InetSocketAddress("127.0.0.1", port))) {
      server.distribute(2, 2, randomId(), Duration.ofSeconds(10));
    }
    assertThat(joined.get().id()).isEqualTo(randomId());
  }

  @Test
  void disagreementFailsBothSidesWithTheReason() throws Exception {
    try (UniqueIdExchange.Server server =
        UniqueIdExchange.listen(new InetSocketAddress("127.0.0.1", 0))) {
      var joined = joinAsync(DistInit.parse(2, 1, "127.0.0.1:" + server.port()), 8);
      assertThatThrownBy(() -> server.distribute(2, 4, randomId(), Duration.ofSeconds(10)))
          .hasMessageContaining("node 1 drives 8 GPUs, node 0 drives 4");
      assertThatThrownBy(joined::get)
          .isInstanceOf(ExecutionException.class)
          .hasMessageContaining("node 0 refused");
    }
  }

  @Test
  void missingNodesTimeOutNamingThem() throws Exception {
    try (UniqueIdExchange.Server server =
        UniqueIdExchange.listen(new InetSocketAddress("127.0.0.1", 0))) {
      assertThatThrownBy(() -> server.distribute(3, 1, randomId(), Duration.ofMillis(300)))
          .hasMessageContaining("only 1 of 3 nodes arrived")
          .hasMessageContaining("[1, 2]");
    }
  }

  @Test
  void unreachableNodeZeroTimesOut() throws Exception {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    assertThatThrownBy(
            () ->
                UniqueIdExchange.join(
                    DistInit.parse(2, 1, "127.0.0.1:" + port), 1, Duration.ofMillis(500)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("could not reach node 0");
  }

  @Test
  void distInitParsesAndValidates() {
    assertThat(DistInit.parse(2, 1, "10.0.0.1:5000"))
        .isEqualTo(new DistInit(2, 1, "10.0.0.1", 5000));
    assertThat(DistInit.parse(2, 0, "[::1]:29500").host()).isEqualTo("::1");
    assertThatThrownBy(() -> DistInit.parse(2, 0, null)).hasMessageContaining("required");
    assertThatThrownBy(() -> DistInit.parse(2, 2, "h:1")).hasMessageContaining("--node-rank");
    assertThatThrownBy(() -> DistInit.parse(1, 0, "nohost")).hasMessageContaining("HOST:PORT");
  }
}
