package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.CollectiveStats;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The test communicator's all-to-all (three ranks sharing GPU 0): uneven counts, zeros included,
 * eagerly and captured into one CUDA graph per rank replayed on fresh inputs, against the blocks
 * the host expects; the model tests on one GPU rely on it.
 */
@Tag("gpu")
class SameDeviceCommunicatorGpuTest {
  private static final int RANKS = 3;

  @Test
  void allToAllDeliversEveryBlockEagerlyAndInGraphs() throws Exception {
    Rand r = new Rand();
    long[][] counts = new long[RANKS][RANKS]; // counts[s][p]: floats rank s sends rank p
    for (int s = 0; s < RANKS; s++) {
      for (int p = 0; p < RANKS; p++) {
        counts[s][p] = r.nextInt(3) == 0 ? 0 : 1 + r.nextInt(5000);
      }
    }
    counts[1][1] = 0; // nothing to itself
    counts[0][2] = 0;
    counts[1][2] = 0;
    counts[2][2] = 0; // rank 2 receives nothing
    try (SameGpuRanks ranks = new SameGpuRanks(RANKS, AllReduceAlgorithm.ONESHOT)) {
      List<Rank> rs = new ArrayList<>();
      for (int i = 0; i < RANKS; i++) {
        int me = i;
        rs.add(ranks.threads.get(i).submit(() -> new Rank(me, counts)).get());
      }
      try {
        for (int round = 0; round < 2; round++) {
          float[][] data = inputs(r, counts);
          onAll(
              ranks,
              rs,
              k -> {
                k.upload(data[k.rank]);
                k.run(ranks.comms.get(k.rank));
              });
          check(ranks, rs, data, counts, "eager round " + round + ", seed " + r.seed());
        }
        onAll(ranks, rs, k -> k.capture(ranks.comms.get(k.rank)));
        for (int replay = 0; replay < 3; replay++) {
          float[][] data = inputs(r, counts);
          onAll(
              ranks,
              rs,
              k -> {
                k.upload(data[k.rank]);
                k.replay();
              });
          check(ranks, rs, data, counts, "graph replay " + replay + ", seed " + r.seed());
        }
        // Two eager calls and one captured; the device barriers are not reported.
        CollectiveStats stats = ranks.comms.getFirst().stats();
        assertThat(stats.count(CollectiveOp.ALL_TO_ALL)).isEqualTo(3);
        assertThat(stats.count(CollectiveOp.ALL_REDUCE)).isZero();
      } finally {
        // Not through onAll: it would synchronise each stream after close() destroyed it.
        for (Rank k : rs) {
          ranks.threads.get(k.rank).run(k::close);
        }
      }
    }
  }

  /** One rank's buffers, stream and graph (GPU thread only). */
  private static final class Rank {
    final int rank;
    final long[] send;
    final long[] recv;
    final CudaStream stream = CudaStream.create();
    final DeviceBuffer in;
    final DeviceBuffer out;
    CudaGraph graph;

    Rank(int rank, long[][] counts) {
      this.rank = rank;
      this.send = counts[rank].clone();
      this.recv = new long[RANKS];
      for (int s = 0; s < RANKS; s++) {
        recv[s] = counts[s][rank];
      }
      in = DeviceBuffer.allocate(4 * Math.max(1, sum(send)));
      out = DeviceBuffer.allocate(4 * Math.max(1, sum(recv)));
    }

    void upload(float[] v) {
      if (v.length > 0) {
        in.upload(stream, v);
      }
      out.poison(stream);
    }

    void run(DeviceCommunicator c) {
      c.allToAll(in.ptr(), send, out.ptr(), recv, stream);
    }

    void capture(DeviceCommunicator c) {
      graph = stream.capture(() -> run(c));
    }

    void replay() {
      graph.launch(stream);
    }

    float[] received() {
      int n = (int) sum(recv);
      return n == 0 ? new float[0] : out.downloadFloats(stream, n);
    }

    void close() {
      stream.synchronize();
      if (graph != null) {
        graph.close();
      }
      in.close();
      out.close();
      stream.close();
    }
  }

  /** Fresh data for every rank ({@code counts[s]}: what rank s sends each rank). */
  private static float[][] inputs(Rand r, long[][] counts) {
    float[][] data = new float[RANKS][];
    for (int s = 0; s < RANKS; s++) {
      data[s] = r.uniform((int) sum(counts[s]), 1f);
    }
    return data;
  }

  /** Runs {@code step} on every rank's thread at once and waits for every rank's stream. */
  private static void onAll(
      SameGpuRanks ranks, List<Rank> rs, java.util.function.Consumer<Rank> step)
      throws InterruptedException, ExecutionException {
    List<Future<Object>> fs = new ArrayList<>();
    for (Rank k : rs) {
      fs.add(
          ranks
              .threads
              .get(k.rank)
              .submit(
                  () -> {
                    step.accept(k);
                    k.stream.synchronize();
                    return null;
                  }));
    }
    for (Future<Object> f : fs) {
      f.get();
    }
  }

  private static void check(
      SameGpuRanks ranks, List<Rank> rs, float[][] data, long[][] counts, String what)
      throws Exception {
    for (Rank k : rs) {
      float[] got = ranks.threads.get(k.rank).submit(k::received).get();
      int o = 0;
      for (int s = 0; s < RANKS; s++) {
        int from = 0;
        for (int p = 0; p < k.rank; p++) {
          from += (int) counts[s][p];
        }
        for (int i = 0; i < counts[s][k.rank]; i++) {
          float want = data[s][from + i];
          if (Float.floatToRawIntBits(got[o + i]) != Float.floatToRawIntBits(want)) {
            throw new AssertionError(
                String.format(
                    "%s: rank %d, element %d from rank %d is %s, want %s",
                    what, k.rank, i, s, got[o + i], want));
          }
        }
        o += (int) counts[s][k.rank];
      }
    }
  }

  private static long sum(long[] v) {
    long s = 0;
    for (long x : v) {
      s += x;
    }
    return s;
  }
}
