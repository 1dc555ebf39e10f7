package dev.ringmaster.parallel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Allreduce: every algorithm and world size against references, bit for bit. */
class CollectiveAllReduceTest {
  private static final int PAD = 3;
  private static final float SENTINEL = 12345.5f;

  static Stream<Arguments> worlds() {
    List<Arguments> cases = new ArrayList<>();
    for (int n = 1; n <= 8; n++) {
      LocalWorldConfig ring = LocalWorldConfig.of(n, AllReduceAlgorithm.RING);
      cases.add(Arguments.of(ring.withChunkElements(5).withRingSlots(2)));
      cases.add(Arguments.of(ring.withChunkElements(64).withRingSlots(3)));
      cases.add(Arguments.of(ring));
      cases.add(Arguments.of(LocalWorldConfig.of(n, AllReduceAlgorithm.ONESHOT)));
      cases.add(Arguments.of(LocalWorldConfig.of(n, AllReduceAlgorithm.TWOSHOT)));
      cases.add(Arguments.of(LocalWorldConfig.of(n, AllReduceAlgorithm.RECURSIVE_DOUBLING)));
      // each way of waiting for a peer on its own, whatever the machine's core count picks
      LocalWorldConfig oneshot = LocalWorldConfig.of(n, AllReduceAlgorithm.ONESHOT);
      cases.add(Arguments.of(oneshot.withSpinIterations(0).withYieldNanos(0)));
      cases.add(Arguments.of(ring.withSpinIterations(0).withYieldNanos(20_000)));
      cases.add(Arguments.of(oneshot.withSpinIterations(2000).withYieldNanos(0)));
      cases.add(
          Arguments.of(
              LocalWorldConfig.of(n, AllReduceAlgorithm.AUTO)
                  .withTable(new AllReduceTable(64, 1024))
                  .withChunkElements(100)));
    }
    return cases.stream();
  }

  @ParameterizedTest
  @MethodSource("worlds")
  void matchesReferenceBitForBitOnEveryRank(LocalWorldConfig config) {
    LocalWorld world = LocalWorld.create(config);
    int n = config.worldSize();
    world.run(
        group -> {
          for (int rep = 0; rep < 2; rep++) { // the second pass reuses grown staging
            for (int len : CollectiveTestData.SIZES) {
              long seed = len * 31L + rep;
              float[][] x = CollectiveTestData.inputs(seed, n, len);
              float[] buf = new float[len + 2 * PAD];
              Arrays.fill(buf, SENTINEL);
              System.arraycopy(x[group.rank()], 0, buf, PAD, len);

              group.allReduce(buf, PAD, len);

              AllReduceAlgorithm algo = config.algorithm();
              if (algo == AllReduceAlgorithm.AUTO) {
                algo = config.table().select(4L * len);
              }
              float[] expected = CollectiveTestData.expected(algo, x, len);
              float[] got = Arrays.copyOfRange(buf, PAD, PAD + len);
              assertThat(got).as("%s len %d rank %d", algo, len, group.rank()).isEqualTo(expected);
              assertClose(got, CollectiveTestData.doubleSum(x, len), n);
              for (int i = 0; i < PAD; i++) {
                assertThat(buf[i]).isEqualTo(SENTINEL);
                assertThat(buf[PAD + len + i]).isEqualTo(SENTINEL);
              }
            }
          }
        });
  }

  private static void assertClose(float[] got, double[] exact, int n) {
    for (int i = 0; i < got.length; i++) {
      // inputs are in [-1, 1): n terms, each rounding at most n ulps of n.
      assertThat((double) got[i]).isCloseTo(exact[i], offset(1e-6 * n * n));
    }
  }
}
