package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.MoeRouting;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.model.config.MoeConfig;
import java.util.Locale;

/**
 * KernelBench rows that take a one-token MoE router apart: the router GEMV alone (one warp a row,
 * as the routing kernel computes it, and the default one-token GEMV), the routing kernel alone, the
 * grouping of pairs by expert alone, and the one-launch router + routing with and without the
 * grouping. In the batch-1 decode graph on an H200 the one-launch router took 10.9 us for a 256 KB
 * GEMV, with its SMs active for under a tenth of its cycles (docs/cuda-performance.md, v9); these
 * rows show which part the time is in. Router weights cycle through copies that the L2 cannot hold,
 * as each layer's router is read from DRAM in the model.
 */
final class RouterBench {
  /** Bytes of router-weight copies to cycle through (past the H200's 60 MB L2). */
  private static final long CYCLED_BYTES = 128L << 20;

  private RouterBench() {}

  /** Adds the rows for a DeepSeek-V2-Lite and a DeepSeek-V3 router to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    shape(
        b,
        k,
        s,
        "V2-Lite 64e top-6 K 2048 softmax",
        2048,
        new MoeConfig(
            64,
            6,
            1408,
            2816,
            MoeConfig.Scoring.SOFTMAX,
            MoeConfig.Selection.GREEDY,
            1,
            1,
            false,
            1.0,
            false));
    shape(
        b,
        k,
        s,
        "V3 256e top-8 K 7168 sigmoid 8 groups",
        7168,
        new MoeConfig(
            256,
            8,
            2048,
            2048,
            MoeConfig.Scoring.SIGMOID,
            MoeConfig.Selection.NOAUX_TC,
            8,
            4,
            true,
            2.5,
            true));
  }

  private static void shape(
      KernelBench b, RingmasterKernels k, CudaStream s, String what, int hidden, MoeConfig moe) {
    int e = moe.numExperts();
    int n = 1;
    MoeRouting routing = MoeRouting.of(moe);
    long gateBytes = 2L * e * hidden;
    int copies = (int) Math.max(1, CYCLED_BYTES / gateBytes);
    DeviceBuffer gate = b.randomBf16((long) copies * e * hidden, 0.05f);
    DeviceBuffer x = b.randomF32(n * hidden);
    DeviceBuffer bias = b.randomF32(e);
    long biasPtr = moe.hasScoreCorrectionBias() ? bias.ptr() : 0;
    DeviceBuffer logits = DeviceBuffer.allocate(4L * n * e);
    DeviceBuffer experts = DeviceBuffer.allocate(4L * n * moe.topK());
    DeviceBuffer weights = DeviceBuffer.allocate(4L * n * moe.topK());
    int splitK = k.gemvSplitK();
    int rows = k.gemvRowsPerWarp();
    try (MoeWorkspace ws =
        new MoeWorkspace(n, e, moe.topK(), hidden, moe.expertIntermediateSize())) {
      // Real logits and a valid routing first, for the routing and align rows.
      k.gemv(s, logits.ptr(), gate.ptr(), x.ptr(), e, hidden, n);
      k.moe().moeRoute(s, experts.ptr(), weights.ptr(), logits.ptr(), biasPtr, n, routing);
      String shape = String.format(Locale.ROOT, "router %s, 1 token", what);
      double gemvBytes = gateBytes;
      k.useGemvSplitK(1);
      k.useGemvRowsPerWarp(1);
      double ms =
          b.time(
              i ->
                  k.gemv(
                      s, logits.ptr(), gate.ptr((i % copies) * gateBytes), x.ptr(), e, hidden, n));
      b.row(shape + ": gemv, one warp a row", ms, gemvBytes / (ms * 1e6));
      k.useGemvSplitK(splitK);
      k.useGemvRowsPerWarp(rows);
      ms =
          b.time(
              i ->
                  k.gemv(
                      s, logits.ptr(), gate.ptr((i % copies) * gateBytes), x.ptr(), e, hidden, n));
      b.row(shape + ": gemv, default one-token kernel", ms, gemvBytes / (ms * 1e6));
      ms =
          b.time(
              i ->
                  k.moe()
                      .moeRoute(
                          s, experts.ptr(), weights.ptr(), logits.ptr(), biasPtr, n, routing));
      b.row(shape + ": routing kernel alone", ms, 0);
      ms = b.time(i -> k.moe().moeAlign(s, ws, experts.ptr(), n));
      b.row(shape + ": align alone", ms, 0);
      for (boolean align : new boolean[] {false, true}) {
        ms =
            b.time(
                i ->
                    k.smallBatchMoe()
                        .routerRoute(
                            s,
                            ws,
                            logits.ptr(),
                            experts.ptr(),
                            weights.ptr(),
                            gate.ptr((i % copies) * gateBytes),
                            x.ptr(),
                            hidden,
                            biasPtr,
                            n,
                            routing,
                            align));
        b.row(
            shape
                + (align
                    ? ": router + routing + align, one launch"
                    : ": router + routing, one launch"),
            ms,
            gemvBytes / (ms * 1e6));
      }
    } finally {
      k.useGemvSplitK(splitK);
      k.useGemvRowsPerWarp(rows);
      for (DeviceBuffer d : new DeviceBuffer[] {gate, x, bias, logits, experts, weights}) {
        d.close();
      }
    }
  }
}
