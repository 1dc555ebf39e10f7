package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * KernelBench rows that compare the decode GEMV-type kernel variants at DeepSeek-V2-Lite shapes: R
 * weight rows per warp (1 = the default kernels, 2, 4) for the routed-expert down projection and
 * the one-token GEMVs, and split-K over S warps per row (2, 4) for the GEMVs. Batch 1 is
 * latency-bound (single-wave grids of one row per warp, waiting on loads); these rows show whether
 * more bytes in flight per warp, or more and lighter warps, move it. Every row cycles through
 * enough weight copies or expert routings that the L2 cannot hold them.
 */
final class RowsPerWarpBench {
  private static final int HIDDEN = 2048;
  private static final int INTER = 1408;
  private static final int EXPERTS = 64;
  private static final int TOP_K = 6;

  /** Routings the MoE rows cycle through (as KernelBench's moe rows). */
  private static final int ROUTINGS = 8;

  private static final int[] ROWS_PER_WARP = {1, 2, 4};
  private static final int[] SPLIT_K = {2, 4};

  private RowsPerWarpBench() {}

  /** Adds the rows to {@code b}, then restores the variants {@code k} had chosen. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    int downRows = k.moe().moeDownRowsPerWarp();
    int gemvRows = k.gemvRowsPerWarp();
    int splitK = k.gemvSplitK();
    try {
      for (int n : new int[] {1, 2, 4}) {
        moeDown(b, k, s, n);
      }
      gemv(b, k, s, "gemv 2048x2048 (o_proj)", 2048, 0, 2048);
      gemv(b, k, s, "gemv2 3072+576 x 2048 (q|kv_a)", 3072, 576, 2048);
      gemv(b, k, s, "gemv 16384x2048", 16384, 0, 2048);
    } finally {
      k.moe().useMoeDownRowsPerWarp(downRows);
      k.useGemvRowsPerWarp(gemvRows);
      k.useGemvSplitK(splitK);
    }
  }

  /**
   * The routed down projection of one V2-Lite MoE layer for {@code n} tokens, alone and as part of
   * the whole CUDA-core expert sequence (align, gate/up, down, combine), per rows-per-warp choice.
   * One workspace per routing, aligned and with its intermediate rows computed beforehand, so that
   * the timed down launches cycle through the routings' experts.
   */
  private static void moeDown(KernelBench b, RingmasterKernels k, CudaStream s, int n) {
    DeviceBuffer w13 = b.randomBf16((long) EXPERTS * 2 * INTER * HIDDEN, 0.02f);
    DeviceBuffer w2 = b.randomBf16((long) EXPERTS * HIDDEN * INTER, 0.02f);
    DeviceBuffer x = b.randomF32(n * HIDDEN);
    DeviceBuffer out = DeviceBuffer.allocate(4L * n * HIDDEN);
    int pairs = n * TOP_K;
    RandomRoutings routed = RandomRoutings.of(new SplittableRandom(n), ROUTINGS, n, EXPERTS, TOP_K);
    int[] experts = routed.experts();
    float[] weights = routed.weights();
    long activeTotal = routed.activeTotal();
    DeviceBuffer de = DeviceBuffer.allocate(4L * experts.length);
    de.upload(s, experts);
    DeviceBuffer dw = DeviceBuffer.allocate(4L * weights.length);
    dw.upload(s, weights);
    MoeWorkspace[] ws = new MoeWorkspace[ROUTINGS];
    long pairBytes = 4L * pairs;
    try {
      for (int r = 0; r < ROUTINGS; r++) {
        ws[r] = new MoeWorkspace(n, EXPERTS, TOP_K, HIDDEN, INTER);
        k.moe()
            .moeExpertsFused(
                s,
                ws[r],
                out.ptr(),
                x.ptr(),
                w13.ptr(),
                w2.ptr(),
                de.ptr(r * pairBytes),
                dw.ptr(r * pairBytes),
                n,
                HIDDEN,
                INTER,
                false);
      }
      double active = activeTotal / (double) ROUTINGS;
      double downBytes = active * HIDDEN * INTER * 2.0 + 4.0 * pairs * (INTER + HIDDEN);
      String shape =
          String.format(
              Locale.ROOT, "64e top-6 %dx%d, batch %d, %.1f active", HIDDEN, INTER, n, active);
      for (int rows : ROWS_PER_WARP) {
        k.moe().useMoeDownRowsPerWarp(rows);
        double ms =
            b.time(
                i -> {
                  int r = i % ROUTINGS;
                  k.moe().moeDown(s, ws[r], w2.ptr(), dw.ptr(r * pairBytes), n, HIDDEN, INTER);
                });
        b.row(
            String.format(Locale.ROOT, "rows: moe down %s, %d rows/warp", shape, rows),
            ms,
            downBytes / (ms * 1e6));
      }
      for (int rows : ROWS_PER_WARP) {
        k.moe().useMoeDownRowsPerWarp(rows);
        double ms =
            b.time(
                i -> {
                  int r = i % ROUTINGS;
                  k.moe()
                      .moeExpertsFused(
                          s,
                          ws[r],
                          out.ptr(),
                          x.ptr(),
                          w13.ptr(),
                          w2.ptr(),
                          de.ptr(r * pairBytes),
                          dw.ptr(r * pairBytes),
                          n,
                          HIDDEN,
                          INTER,
                          false);
                });
        b.row(
            String.format(Locale.ROOT, "rows: moe layer %s, down %d rows/warp", shape, rows),
            ms,
            active * 3.0 * HIDDEN * INTER * 2 / (ms * 1e6));
      }
    } finally {
      for (MoeWorkspace w : ws) {
        if (w != null) {
          w.close();
        }
      }
      for (DeviceBuffer d : new DeviceBuffer[] {w13, w2, x, out, de, dw}) {
        d.close();
      }
    }
  }

  /**
   * A one-token GEMV of {@code m1} rows ({@code m2} = 0), or two stacked in one launch ({@link
   * RingmasterKernels#gemv2}), per variant: rows per warp 1, 2, 4, then split-K over 2 and 4 warps.
   */
  private static void gemv(
      KernelBench b, RingmasterKernels k, CudaStream s, String what, int m1, int m2, int kDim) {
    long bytes = 2L * (m1 + m2) * kDim;
    int copies = (int) Math.max(2, (512L << 20) / bytes);
    DeviceBuffer w = b.randomBf16(bytes / 2 * copies, 0.05f);
    DeviceBuffer x = b.randomF32(kDim);
    DeviceBuffer y = DeviceBuffer.allocate(4L * (m1 + m2));
    double moved = bytes + 4.0 * kDim + 4.0 * (m1 + m2);
    try {
      for (int v = 0; v < ROWS_PER_WARP.length + SPLIT_K.length; v++) {
        boolean split = v >= ROWS_PER_WARP.length;
        k.useGemvRowsPerWarp(split ? 1 : ROWS_PER_WARP[v]);
        k.useGemvSplitK(split ? SPLIT_K[v - ROWS_PER_WARP.length] : 1);
        double ms =
            b.time(
                i -> {
                  long wi = w.ptr((i % copies) * bytes);
                  if (m2 == 0) {
                    k.gemv(s, y.ptr(), wi, x.ptr(), m1, kDim, 1);
                  } else {
                    long w2 = wi + 2L * m1 * kDim;
                    k.gemv2(s, y.ptr(), wi, m1, y.ptr(4L * m1), w2, m2, x.ptr(), kDim, 1);
                  }
                });
        String variant =
            split ? "split-K " + k.gemvSplitK() + " warps/row" : k.gemvRowsPerWarp() + " rows/warp";
        b.row("rows: " + what + ", 1 token, " + variant, ms, moved / (ms * 1e6));
      }
    } finally {
      w.close();
      x.close();
      y.close();
    }
  }
}
