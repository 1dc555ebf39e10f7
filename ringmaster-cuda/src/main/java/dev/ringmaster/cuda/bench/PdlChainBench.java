package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.IntConsumer;

/**
 * KernelBench rows that put one number on programmatic dependent launch (PDL): chains of small
 * dependent kernels at the batch-1 shapes of DeepSeek-V2-Lite (hidden 2048), each kernel reading
 * the previous one's output, captured in one graph with PDL off and then on. The difference per
 * kernel boundary is what PDL saves on every boundary of a decode step (~20 kernels per layer).
 */
final class PdlChainBench {
  private static final int HIDDEN = 2048;

  /** RMSNorm + GEMV pairs per chain: 20 kernels, about one decoder layer's launch count. */
  private static final int PAIRS = 10;

  /** Distinct weight matrices the chains cycle through: 256 MB, well past the 60 MB L2. */
  private static final int COPIES = 32;

  private PdlChainBench() {}

  /** Adds the rows to {@code b}: each chain with PDL off, on, and the saving per boundary. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    boolean before = k.programmaticDependentLaunch();
    long matrix = 2L * HIDDEN * HIDDEN;
    DeviceBuffer w = b.randomBf16(matrix / 2 * COPIES, 0.02f);
    DeviceBuffer x = b.randomF32(HIDDEN);
    DeviceBuffer h = DeviceBuffer.allocate(4L * HIDDEN);
    DeviceBuffer norm = b.randomF32(HIDDEN);
    DeviceBuffer ones = DeviceBuffer.allocate(4L * HIDDEN);
    float[] one = new float[HIDDEN];
    Arrays.fill(one, 1f);
    ones.upload(s, one);
    try {
      // Norm and GEMV alternate; the GEMV writes x back, so every kernel reads its predecessor.
      pair(
          b,
          k,
          String.format(
              Locale.ROOT, "pdl chain %d x (rmsnorm + gemv %dx%d), 1 token", PAIRS, HIDDEN, HIDDEN),
          2 * PAIRS,
          PAIRS * (matrix + 20.0 * HIDDEN),
          i -> {
            for (int j = 0; j < PAIRS; j++) {
              k.rmsNorm(s, h.ptr(), HIDDEN, 0, 0, x.ptr(), HIDDEN, norm.ptr(), 1, HIDDEN, 1e-6f);
              long wj = w.ptr(((long) i * PAIRS + j) % COPIES * matrix);
              k.gemv(s, x.ptr(), wj, h.ptr(), HIDDEN, HIDDEN, 1);
            }
          });
      // Launch latency alone: one-block kernels whose work is far shorter than the launch gap,
      // ping-ponging between x and h (unit weight: the values stay put).
      pair(
          b,
          k,
          String.format(
              Locale.ROOT,
              "pdl chain %d x rmsnorm %d (one block each), 1 token",
              2 * PAIRS,
              HIDDEN),
          2 * PAIRS,
          2 * PAIRS * 12.0 * HIDDEN,
          i -> {
            for (int j = 0; j < PAIRS; j++) {
              k.rmsNorm(s, h.ptr(), HIDDEN, 0, 0, x.ptr(), HIDDEN, ones.ptr(), 1, HIDDEN, 1e-6f);
              k.rmsNorm(s, x.ptr(), HIDDEN, 0, 0, h.ptr(), HIDDEN, ones.ptr(), 1, HIDDEN, 1e-6f);
            }
          });
    } finally {
      k.setProgrammaticDependentLaunch(before);
      for (DeviceBuffer d : new DeviceBuffer[] {w, x, h, norm, ones}) {
        d.close();
      }
    }
  }

  /** Times {@code chain} (of {@code kernels} launches) captured with PDL off, then on. */
  private static void pair(
      KernelBench b,
      RingmasterKernels k,
      String what,
      int kernels,
      double bytes,
      IntConsumer chain) {
    k.setProgrammaticDependentLaunch(false);
    double off = b.time(chain);
    k.setProgrammaticDependentLaunch(true);
    double on = b.time(chain);
    b.row(what + ", PDL off", off, bytes / (off * 1e6));
    b.row(what + ", PDL on", on, bytes / (on * 1e6));
    b.row(
        String.format(Locale.ROOT, "  PDL saving per kernel boundary (%d per chain)", kernels),
        (off - on) / kernels,
        0);
  }
}
