package dev.ringmaster.parallel.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.AllReduceTable;
import dev.ringmaster.parallel.CollectiveTestData;
import dev.ringmaster.parallel.Splits;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Collectives over TCP between nodes (each node a {@link TcpWorld} with real loopback sockets)
 * equal the naive references bit for bit, for every algorithm, world sizes 1 to 5 over 1 to 5
 * nodes, and sizes from zero to above one read chunk, including sizes the world size does not
 * divide.
 */
class TcpCollectivesTest {
  private static final int PAD = 3;
  private static final float SENTINEL = 12345.5f;

  /** (ranks, nodes) layouts: one rank per node, several per node, all on one node. */
  static Stream<Arguments> layouts() {
    return Stream.of(
        Arguments.of(1, 1),
        Arguments.of(2, 1),
        Arguments.of(2, 2),
        Arguments.of(3, 3),
        Arguments.of(4, 2),
        Arguments.of(4, 4),
        Arguments.of(5, 5));
  }

  private static final AllReduceAlgorithm[] ALGORITHMS = {
    AllReduceAlgorithm.RING,
    AllReduceAlgorithm.ONESHOT,
    AllReduceAlgorithm.TWOSHOT,
    AllReduceAlgorithm.RECURSIVE_DOUBLING,
    AllReduceAlgorithm.NCCL,
    AllReduceAlgorithm.FUSED,
    AllReduceAlgorithm.AUTO
  };

  @ParameterizedTest(name = "{0} ranks on {1} nodes")
  @MethodSource("layouts")
  void allReduceMatchesTheReferenceBitForBit(int n, int nnodes) throws Exception {
    TcpWorldConfig cfg =
        TcpWorldConfig.of(n, nnodes, AllReduceAlgorithm.AUTO)
            .withTable(new AllReduceTable(64, 1024));
    List<Integer> sizes = new ArrayList<>();
    for (int len : CollectiveTestData.SIZES) {
      sizes.add(len);
    }
    sizes.add(300_007); // more than one 1 MiB read chunk per frame
    try (TcpTestCluster c = TcpTestCluster.start(cfg)) {
      c.run(
          group -> {
            for (AllReduceAlgorithm requested : ALGORITHMS) {
              for (int len : sizes) {
                if (len > 100_000
                    && requested != AllReduceAlgorithm.RING
                    && requested != AllReduceAlgorithm.ONESHOT) {
                  continue; // the large size is about framing, not the algorithm
                }
                float[][] x = CollectiveTestData.inputs(len * 31L + requested.ordinal(), n, len);
                float[] buf = new float[len + 2 * PAD];
                Arrays.fill(buf, SENTINEL);
                System.arraycopy(x[group.rank()], 0, buf, PAD, len);
                group.allReduce(buf, PAD, len, requested);
                AllReduceAlgorithm algo =
                    requested == AllReduceAlgorithm.AUTO ? cfg.table().select(4L * len) : requested;
                float[] got = Arrays.copyOfRange(buf, PAD, PAD + len);
                if (!Arrays.equals(got, CollectiveTestData.expected(algo, x, len))) {
                  throw new AssertionError(
                      requested + " len " + len + " rank " + group.rank() + " differs");
                }
                double[] exact = CollectiveTestData.doubleSum(x, len);
                for (int i = 0; i < len; i += 97) {
                  assertThat((double) got[i]).isCloseTo(exact[i], offset(1e-6 * n * n));
                }
                for (int i = 0; i < PAD; i++) {
                  assertThat(buf[i]).isEqualTo(SENTINEL);
                  assertThat(buf[PAD + len + i]).isEqualTo(SENTINEL);
                }
              }
            }
          });
    }
  }

  @ParameterizedTest(name = "{0} ranks on {1} nodes")
  @MethodSource("layouts")
  void gatherScatterAllToAllBroadcastBarrier(int n, int nnodes) throws Exception {
    try (TcpTestCluster c =
        TcpTestCluster.start(TcpWorldConfig.of(n, nnodes, AllReduceAlgorithm.RING))) {
      c.run(
          group -> {
            int r = group.rank();
            Random random = new Random(5); // the same draws on every rank
            for (int len : CollectiveTestData.SIZES) {
              float[][] x = CollectiveTestData.inputs(len, n, len);
              // allgather, from an offset and in place
              float[] send = new float[len + 1];
              System.arraycopy(x[r], 0, send, 1, len);
              float[] recv = new float[n * len];
              group.allGather(send, 1, len, recv);
              for (int s = 0; s < n; s++) {
                assertThat(Arrays.copyOfRange(recv, s * len, (s + 1) * len)).isEqualTo(x[s]);
              }
              float[] inPlace = new float[n * len];
              System.arraycopy(x[r], 0, inPlace, r * len, len);
              group.allGather(inPlace, r * len, len, inPlace);
              assertThat(inPlace).isEqualTo(recv);

              // reduce-scatter, even and random splits (some parts empty)
              for (int[] counts : new int[][] {Splits.even(len, n), randomSplit(random, len, n)}) {
                float[] out = new float[counts[r] + 1];
                out[counts[r]] = -7f;
                group.reduceScatter(x[r].clone(), out, counts);
                assertThat(Arrays.copyOf(out, counts[r]))
                    .isEqualTo(
                        CollectiveTestData.rankOrderSum(x, Splits.prefix(counts, r), counts[r]));
                assertThat(out[counts[r]]).isEqualTo(-7f);
              }

              // uneven all-to-all with zero counts: rank s sends value(s, d, i) to d
              int[][] plan = new int[n][n];
              for (int[] row : plan) {
                for (int d = 0; d < n; d++) {
                  row[d] = random.nextInt(3) == 0 ? 0 : random.nextInt(len + 1);
                }
              }
              int[] sendCounts = plan[r];
              float[] a2aSend = new float[Splits.sum(sendCounts)];
              for (int d = 0, at = 0; d < n; d++) {
                for (int i = 0; i < sendCounts[d]; i++) {
                  a2aSend[at++] = value(r, d, i);
                }
              }
              int[] recvCounts = group.exchangeCounts(sendCounts);
              for (int s = 0; s < n; s++) {
                assertThat(recvCounts[s]).isEqualTo(plan[s][r]);
              }
              float[] a2aRecv = new float[Splits.sum(recvCounts)];
              group.allToAll(a2aSend, sendCounts, a2aRecv, recvCounts);
              for (int s = 0, at = 0; s < n; s++) {
                for (int i = 0; i < recvCounts[s]; i++) {
                  assertThat(a2aRecv[at++]).isEqualTo(value(s, r, i));
                }
              }

              // broadcast from every root
              for (int root = 0; root < n; root++) {
                float[] buf = new float[len + 2];
                if (r == root) {
                  System.arraycopy(x[root], 0, buf, 1, len);
                }
                group.broadcast(buf, 1, len, root);
                assertThat(Arrays.copyOfRange(buf, 1, len + 1)).isEqualTo(x[root]);
                assertThat(buf[0]).isZero();
                assertThat(buf[len + 1]).isZero();
              }
              group.barrier();
            }
          });
    }
  }

  @Test
  void aTcpWorldGivesTheSameBitsAsTheInProcessWorld() throws Exception {
    int n = 4;
    int len = 1021;
    float[][] x = CollectiveTestData.inputs(77, n, len);
    float[][] local = new float[n][];
    dev.ringmaster.parallel.LocalWorld.create(n, AllReduceAlgorithm.RING)
        .run(
            g -> {
              float[] b = x[g.rank()].clone();
              g.allReduce(b);
              local[g.rank()] = b;
            });
    try (TcpTestCluster c =
        TcpTestCluster.start(TcpWorldConfig.of(n, 2, AllReduceAlgorithm.RING))) {
      c.run(
          g -> {
            float[] b = x[g.rank()].clone();
            g.allReduce(b);
            assertThat(b).isEqualTo(local[g.rank()]);
          });
    }
  }

  private static float value(int src, int dst, int i) {
    return src * 1e5f + dst * 1e4f + i;
  }

  private static int[] randomSplit(Random random, int total, int n) {
    int[] counts = new int[n];
    for (int i = 0; i < total; i++) {
      counts[random.nextInt(n)]++;
    }
    return counts;
  }
}
