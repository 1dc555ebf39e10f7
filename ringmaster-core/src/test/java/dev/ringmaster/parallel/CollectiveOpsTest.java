package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Allgather, reduce-scatter, all-to-all, broadcast, barrier and mixed sequences, ranks 1 to 8. */
class CollectiveOpsTest {

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
  void allGatherConcatenatesByRank(int n) {
    LocalWorld.create(n, AllReduceAlgorithm.AUTO)
        .run(
            group -> {
              for (int len : CollectiveTestData.SIZES) {
                float[][] x = CollectiveTestData.inputs(len, n, len);
                float[] send = new float[len + 1];
                System.arraycopy(x[group.rank()], 0, send, 1, len);
                float[] recv = new float[n * len];
                group.allGather(send, 1, len, recv);
                for (int r = 0; r < n; r++) {
                  assertThat(Arrays.copyOfRange(recv, r * len, (r + 1) * len)).isEqualTo(x[r]);
                }
                // In place: the send range is this rank's block of recv.
                float[] inPlace = new float[n * len];
                System.arraycopy(x[group.rank()], 0, inPlace, group.rank() * len, len);
                group.allGather(inPlace, group.rank() * len, len, inPlace);
                assertThat(inPlace).isEqualTo(recv);
              }
            });
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
  void reduceScatterSumsInRankOrder(int n) {
    LocalWorld.create(n, AllReduceAlgorithm.AUTO)
        .run(
            group -> {
              Random random = new Random(7);
              for (int total : CollectiveTestData.SIZES) {
                for (int[] counts :
                    new int[][] {Splits.even(total, n), randomSplit(random, total, n)}) {
                  float[][] x = CollectiveTestData.inputs(total + 5, n, total);
                  int r = group.rank();
                  float[] recv = new float[counts[r] + 1];
                  recv[counts[r]] = -7f;
                  group.reduceScatter(x[r].clone(), recv, counts);
                  float[] expected =
                      CollectiveTestData.rankOrderSum(x, Splits.prefix(counts, r), counts[r]);
                  assertThat(Arrays.copyOf(recv, counts[r])).isEqualTo(expected);
                  assertThat(recv[counts[r]]).isEqualTo(-7f);
                }
              }
            });
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
  void allToAllWithUnevenAndZeroCounts(int n) {
    int trials = 30;
    // counts[trial][src][dst], the same on every rank
    int[][][] counts = new int[trials][n][n];
    Random random = new Random(11);
    for (int[][] trial : counts) {
      for (int[] row : trial) {
        for (int d = 0; d < n; d++) {
          row[d] = random.nextInt(4) == 0 ? 0 : random.nextInt(50);
        }
      }
    }
    LocalWorld.create(n, AllReduceAlgorithm.AUTO)
        .run(
            group -> {
              int r = group.rank();
              for (int t = 0; t < trials; t++) {
                int[] sendCounts = counts[t][r];
                float[] send = new float[Splits.sum(sendCounts)];
                for (int d = 0, at = 0; d < n; d++) {
                  for (int i = 0; i < sendCounts[d]; i++) {
                    send[at++] = value(t, r, d, i);
                  }
                }
                int[] recvCounts = group.exchangeCounts(sendCounts);
                for (int s = 0; s < n; s++) {
                  assertThat(recvCounts[s]).isEqualTo(counts[t][s][r]);
                }
                float[] recv = new float[Splits.sum(recvCounts)];
                group.allToAll(send, sendCounts, recv, recvCounts);
                for (int s = 0, at = 0; s < n; s++) {
                  for (int i = 0; i < recvCounts[s]; i++) {
                    assertThat(recv[at++]).isEqualTo(value(t, s, r, i));
                  }
                }
              }
            });
  }

  private static float value(int trial, int src, int dst, int i) {
    return trial * 1e5f + src * 1e4f + dst * 1e3f + i;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
  void broadcastFromEveryRoot(int n) {
    LocalWorld.create(n, AllReduceAlgorithm.AUTO)
        .run(
            group -> {
              for (int root = 0; root < n; root++) {
                for (int len : new int[] {0, 1, 7, 1000}) {
                  float[] data = CollectiveTestData.input(root * 100 + len, root, len);
                  float[] buf = new float[len + 2];
                  if (group.rank() == root) {
                    System.arraycopy(data, 0, buf, 1, len);
                  }
                  group.broadcast(buf, 1, len, root);
                  assertThat(Arrays.copyOfRange(buf, 1, len + 1)).isEqualTo(data);
                  assertThat(buf[0]).isZero();
                  assertThat(buf[len + 1]).isZero();
                }
              }
            });
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 5, 8})
  void barrierHoldsEveryRankUntilAllArrive(int n) {
    AtomicInteger arrived = new AtomicInteger();
    LocalWorld.create(n, AllReduceAlgorithm.AUTO)
        .run(
            group -> {
              for (int round = 1; round <= 50; round++) {
                arrived.incrementAndGet();
                group.barrier();
                assertThat(arrived.get()).isGreaterThanOrEqualTo(round * n);
                group.barrier(); // nobody starts the next round before all have checked
              }
            });
  }

  /** A random sequence of all operations, identical on every rank, each result checked. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4, 7, 8})
  void interleavedOperationsStayConsistent(int n) {
    LocalWorld world =
        LocalWorld.create(LocalWorldConfig.of(n, AllReduceAlgorithm.AUTO).withChunkElements(16));
    world.run(
        group -> {
          Random plan = new Random(99); // same seed: every rank draws the same plan
          AllReduceAlgorithm[] algos = AllReduceAlgorithm.values();
          int r = group.rank();
          for (int step = 0; step < 300; step++) {
            int len = plan.nextInt(300);
            float[][] x = CollectiveTestData.inputs(step, n, len);
            switch (plan.nextInt(5)) {
              case 0 -> {
                AllReduceAlgorithm algo = algos[plan.nextInt(algos.length)];
                float[] buf = x[r].clone();
                group.allReduce(buf, 0, len, algo);
                if (algo == AllReduceAlgorithm.AUTO) {
                  algo = world.config().table().select(4L * len);
                }
                assertThat(buf).isEqualTo(CollectiveTestData.expected(algo, x, len));
              }
              case 1 -> {
                float[] recv = new float[n * len];
                group.allGather(x[r], 0, len, recv);
                assertThat(Arrays.copyOfRange(recv, 0, len)).isEqualTo(x[0]);
                assertThat(Arrays.copyOfRange(recv, (n - 1) * len, n * len)).isEqualTo(x[n - 1]);
              }
              case 2 -> {
                int[] counts = Splits.even(len, n);
                float[] recv = new float[counts[r]];
                group.reduceScatter(x[r], recv, counts);
                assertThat(recv)
                    .isEqualTo(
                        CollectiveTestData.rankOrderSum(x, Splits.prefix(counts, r), counts[r]));
              }
              case 3 -> {
                int root = plan.nextInt(n);
                float[] buf = r == root ? x[root].clone() : new float[len];
                group.broadcast(buf, 0, len, root);
                assertThat(buf).isEqualTo(x[root]);
              }
              default -> {
                int[] counts = Splits.even(len, n);
                float[] recv = new float[n * counts[r]];
                group.allToAll(x[r], counts, recv, group.exchangeCounts(counts));
                int from = Splits.prefix(counts, r);
                for (int s = 0; s < n; s++) {
                  assertThat(Arrays.copyOfRange(recv, s * counts[r], (s + 1) * counts[r]))
                      .isEqualTo(Arrays.copyOfRange(x[s], from, from + counts[r]));
                }
              }
            }
          }
        });
  }

  private static int[] randomSplit(Random random, int total, int n) {
    int[] counts = new int[n];
    for (int i = 0; i < total; i++) {
      counts[random.nextInt(n)]++;
    }
    return counts;
  }
}
