package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.arch.ExpertPlacement;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The all-to-all dispatch's plan without a GPU: the token slices and message sizes, and the whole
 * round trip (pack, exchange, unpack, an owner's experts, exchange back, combine, gather) through
 * {@link A2aReference} giving every token exactly the one-rank MoE output, bit for bit.
 */
class A2aLayoutTest {

  @ParameterizedTest
  @CsvSource({"1,7", "2,5", "2,1", "3,2", "4,13", "4,16", "8,3", "3,0"})
  void slicesCoverTheTokensOnceInRankOrderAsTheCpuSplitsThem(int ranks, int n) {
    int next = 0;
    for (int r = 0; r < ranks; r++) {
      A2aLayout l = new A2aLayout(ranks, r, n, 64, 6);
      assertThat(l.perRank()).isEqualTo((n + ranks - 1) / ranks); // MoeMlp.forwardAllToAll
      assertThat(l.first()).as("rank %d starts where rank %d ended", r, r - 1).isEqualTo(next);
      assertThat(l.mine()).isBetween(0, l.perRank());
      next += l.mine();
      assertThat(l.receivedRows()).isEqualTo(ranks * l.perRank()).isGreaterThanOrEqualTo(n);
      assertThat(l.receivedRows()).isLessThanOrEqualTo(A2aLayout.maxReceivedRows(n, ranks));
      assertThat(l.rowFloats()).isEqualTo(64 + 12);
      assertThat(l.dispatchCounts()).hasSize(ranks).containsOnly(l.perRank() * 76L);
      assertThat(l.combineCounts()).hasSize(ranks).containsOnly(l.perRank() * 6L * 64);
    }
    assertThat(next).isEqualTo(n);
  }

  @ParameterizedTest
  @CsvSource({"4,4", "0,0", "-1,2"})
  void badRanksAreRefused(int rank, int ranks) {
    assertThatThrownBy(() -> new A2aLayout(ranks, rank, 4, 8, 2))
        .isInstanceOf(IllegalArgumentException.class);
  }

  /**
   * Cases: ranks, tokens, experts, topK, hidden, experts the routing draws from (the rest are never
   * chosen; {@code experts / ranks} sends everything to rank 0, so the others receive only
   * padding), shared experts or not.
   */
  @ParameterizedTest
  @CsvSource({
    "2,5,8,2,16,8,true",
    "3,2,6,2,8,6,true", // rank 2 routes no token
    "4,13,16,4,12,4,false", // everything on rank 0's experts
    "2,33,64,6,24,20,true", // most experts never chosen
    "1,7,8,3,8,8,true",
    "8,3,16,2,4,16,false" // five ranks route nothing
  })
  void roundTripGivesEveryTokenTheOneRankOutput(
      int ranks, int n, int experts, int topK, int hidden, int among, boolean shared) {
    long seed = System.nanoTime();
    SplittableRandom r = new SplittableRandom(seed);
    float[] x = new float[n * hidden];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (r.nextDouble() * 2 - 1);
    }
    float[] sharedOut = new float[n * hidden];
    for (int i = 0; i < sharedOut.length; i++) {
      sharedOut[i] = (float) (r.nextDouble() * 2 - 1);
    }
    int[] ids = new int[n * topK];
    float[] weights = new float[n * topK];
    A2aReference.route(r, n, topK, among, ids, weights);
    ExpertPlacement placement = ExpertPlacement.contiguous(experts, ranks);
    int[] owner = new int[experts];
    for (int e = 0; e < experts; e++) {
      owner[e] = placement.owner(e);
    }

    float[][] sends = new float[ranks][];
    for (int s = 0; s < ranks; s++) {
      A2aLayout l = new A2aLayout(ranks, s, n, hidden, topK);
      sends[s] = A2aReference.pack(l, x, ids, weights, owner);
    }
    A2aLayout any = new A2aLayout(ranks, 0, n, hidden, topK);
    float[][] recv = A2aReference.exchange(sends, (int) any.dispatchFloatsPerPeer());
    float[][] ys = new float[ranks][];
    int routedHere = 0;
    for (int p = 0; p < ranks; p++) {
      A2aLayout l = new A2aLayout(ranks, p, n, hidden, topK);
      int[] localOf = new int[experts];
      for (int e = 0; e < experts; e++) {
        localOf[e] = owner[e] == p ? placement.localIndex(e) : -1;
      }
      A2aReference.Unpacked u = A2aReference.unpack(l, recv[p], localOf);
      int[] mine = placement.expertsOf(p);
      ys[p] = new float[l.receivedRows() * topK * hidden];
      java.util.Arrays.fill(ys[p], Float.NaN); // rows of empty slots stay unwritten
      for (int row = 0; row < l.receivedRows(); row++) {
        for (int j = 0; j < topK; j++) {
          int local = u.ids()[row * topK + j];
          if (local < 0) {
            continue;
          }
          routedHere++;
          float[] y = expert(mine[local], u.x(), row * hidden, hidden, u.weights()[row * topK + j]);
          System.arraycopy(y, 0, ys[p], (row * topK + j) * hidden, hidden);
        }
      }
    }
    assertThat(routedHere).as("every routed pair computed once, seed %d", seed).isEqualTo(n * topK);
    float[][] back = A2aReference.exchange(ys, (int) any.combineFloatsPerPeer());
    float[] gathered = new float[ranks * any.perRank() * hidden];
    for (int s = 0; s < ranks; s++) {
      A2aLayout l = new A2aLayout(ranks, s, n, hidden, topK);
      float[] slice = null;
      if (shared) {
        slice = new float[l.perRank() * hidden];
        System.arraycopy(sharedOut, l.first() * hidden, slice, 0, l.mine() * hidden);
      }
      float[] out = A2aReference.combine(l, slice, back[s], ids, owner);
      System.arraycopy(out, 0, gathered, s * l.perRank() * hidden, out.length);
    }
    for (int t = 0; t < n; t++) {
      for (int d = 0; d < hidden; d++) {
        float want = shared ? sharedOut[t * hidden + d] : 0f;
        for (int j = 0; j < topK; j++) {
          want += expert(ids[t * topK + j], x, t * hidden, hidden, weights[t * topK + j])[d];
        }
        assertThat(Float.floatToRawIntBits(gathered[t * hidden + d]))
            .as("token %d dim %d, seed %d", t, d, seed)
            .isEqualTo(Float.floatToRawIntBits(want));
      }
    }
  }

  /** A stand-in expert that depends on its id: {@code w * (x * (e + 1) + d / 1024)}. */
  private static float[] expert(int e, float[] x, int off, int hidden, float w) {
    float[] y = new float[hidden];
    for (int d = 0; d < hidden; d++) {
      y[d] = w * (x[off + d] * (e + 1) + d / 1024f);
    }
    return y;
  }
}
