package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;

/**
 * Times one collective as nccl-tests does: every rank starts each iteration together (host
 * barrier), the time is read by CUDA events on the rank's stream, an iteration takes as long as its
 * slowest rank, and the median over iterations is reported.
 */
public final class RankTimer {
  private RankTimer() {}

  /** One rank's step (called on its GPU thread). */
  @FunctionalInterface
  public interface Step {
    /** Queues work of local rank {@code local} on {@code stream}. */
    void run(int local, NcclCommunicator comm, CudaStream stream);
  }

  /**
   * Runs {@code prepare} (untimed) then {@code op} (timed) {@code warmup + iterations} times on
   * every rank; returns the median of the per-iteration maximum over ranks, in microseconds. {@code
   * streams.get(i)} is local rank i's stream.
   */
  public static double medianMicros(
      DeviceWorld world,
      List<CudaStream> streams,
      Step prepare,
      Step op,
      int warmup,
      int iterations) {
    int n = world.localSize();
    CyclicBarrier together = new CyclicBarrier(n);
    List<double[]> perRank =
        world.run(
            (local, comm) -> {
              CudaStream s = streams.get(local);
              double[] t = new double[iterations];
              try (CudaEvent start = CudaEvent.create();
                  CudaEvent end = CudaEvent.create()) {
                for (int it = 0; it < warmup + iterations; it++) {
                  prepare.run(local, comm, s);
                  s.synchronize();
                  await(together);
                  start.record(s);
                  op.run(local, comm, s);
                  end.record(s);
                  end.synchronize();
                  if (it >= warmup) {
                    t[it - warmup] = 1000.0 * end.millisSince(start);
                  }
                }
              }
              return t;
            });
    double[] slowest = new double[iterations];
    for (double[] t : perRank) {
      for (int i = 0; i < iterations; i++) {
        slowest[i] = Math.max(slowest[i], t[i]);
      }
    }
    Arrays.sort(slowest);
    int m = iterations / 2;
    return iterations % 2 == 1 ? slowest[m] : (slowest[m - 1] + slowest[m]) / 2;
  }

  private static void await(CyclicBarrier b) {
    try {
      b.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (BrokenBarrierException e) {
      throw new IllegalStateException("another rank failed", e);
    }
  }
}
