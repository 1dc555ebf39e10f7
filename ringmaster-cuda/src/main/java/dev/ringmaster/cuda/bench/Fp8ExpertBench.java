package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.MoeKernels;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * KernelBench rows of one V2-Lite-shaped MoE layer's routed experts over FP8 block-scaled weights
 * ({@link MoeKernels#moeExpertPairsFp8} plus the combine, as the bf16 rows time {@code
 * moeExpertsMma} with its combine): the CUDA-core kernels, the tensor-core kernels in passes of 8
 * tokens and in passes of 32, at decode and prefill batch sizes. GB/s counts the FP8 bytes of the
 * active experts (one byte a weight, scales left out), so a row at the bf16 rows' GB/s takes half
 * their time. The 64 experts' codes (550 MB) exceed the L2. First, a one-token layer's routed and
 * shared experts (V2-Lite: 2 shared experts of 1408, 8 copies of their weights cycled so that they
 * come from HBM) three ways on one stream: the shared experts' SwiGLU GEMV and GEMV as separate
 * launches before the routed experts, the shared experts inside the routed experts' launches
 * ({@link MoeKernels.Fp8SharedExperts}, {@code moe-shared-fused}), and that with weights first
 * ({@code quant-weights-first}).
 */
final class Fp8ExpertBench {
  private static final int EXPERTS = 64;
  private static final int TOP_K = 6;
  private static final int HIDDEN = 2048;
  private static final int INTER = 1408;
  private static final int BLOCK = 128;
  private static final int SHARED_INTER = 2816;
  private static final int SHARED_COPIES = 8;

  private Fp8ExpertBench() {}

  /** Adds the rows to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    long w13Codes = (long) EXPERTS * 2 * INTER * HIDDEN;
    long w2Codes = (long) EXPERTS * HIDDEN * INTER;
    DeviceBuffer w13 = b.randomFp8Codes(w13Codes);
    DeviceBuffer w2 = b.randomFp8Codes(w2Codes);
    DeviceBuffer s13 = b.randomF32(EXPERTS * 2 * blocks(INTER) * blocks(HIDDEN));
    DeviceBuffer s2 = b.randomF32(EXPERTS * blocks(HIDDEN) * blocks(INTER));
    SplittableRandom random = new SplittableRandom(7);
    oneTokenWithShared(b, k, s, random, w13, s13, w2, s2);
    for (int n : new int[] {1, 4, 8, 32, 64, 128, 512, 2048}) {
      layer(b, k, s, random, n, w13, s13, w2, s2, 0);
      layer(b, k, s, random, n, w13, s13, w2, s2, MoeKernels.MOE_MMA_FP8_NARROW_PASS_TOKENS);
      layer(b, k, s, random, n, w13, s13, w2, s2, MoeKernels.MOE_MMA_PASS_TOKENS);
    }
    for (DeviceBuffer d : new DeviceBuffer[] {w13, w2, s13, s2}) {
      d.close();
    }
  }

  private static int blocks(int n) {
    return (n + BLOCK - 1) / BLOCK;
  }

  /** One row: the CUDA-core kernels for {@code passTokens} 0, else the tensor-core ones. */
  private static void layer(
      KernelBench b,
      RingmasterKernels k,
      CudaStream s,
      SplittableRandom random,
      int n,
      DeviceBuffer w13,
      DeviceBuffer s13,
      DeviceBuffer w2,
      DeviceBuffer s2,
      int passTokens) {
    boolean mma = passTokens > 0;
    int routings = 8;
    RandomRoutings routed = RandomRoutings.of(random, routings, n, EXPERTS, TOP_K);
    DeviceBuffer x = b.randomF32(n * HIDDEN);
    DeviceBuffer out = DeviceBuffer.allocate(4L * n * HIDDEN);
    DeviceBuffer de = DeviceBuffer.allocate(4L * routed.experts().length);
    de.upload(s, routed.experts());
    DeviceBuffer dw = DeviceBuffer.allocate(4L * routed.weights().length);
    dw.upload(s, routed.weights());
    try (MoeWorkspace ws = new MoeWorkspace(n, EXPERTS, TOP_K, HIDDEN, INTER)) {
      long pairBytes = 4L * n * TOP_K;
      MoeKernels moe = k.moe();
      double ms =
          b.time(
              i -> {
                int r = i % routings;
                moe.moeExpertPairsFp8(
                    s,
                    ws,
                    x.ptr(),
                    w13.ptr(),
                    s13.ptr(),
                    w2.ptr(),
                    s2.ptr(),
                    de.ptr(r * pairBytes),
                    dw.ptr(r * pairBytes),
                    n,
                    HIDDEN,
                    INTER,
                    mma,
                    false,
                    mma ? passTokens : MoeKernels.MOE_MMA_PASS_TOKENS);
                moe.moeCombine(s, out.ptr(), ws.pairRowsPtr(), n, HIDDEN, TOP_K, false);
              });
      double active = routed.activeTotal() / (double) routings;
      double bytes = active * 3.0 * HIDDEN * INTER;
      b.row(
          String.format(
              Locale.ROOT,
              "moe fp8 V2-Lite layer batch %d, %.1f experts active, %s",
              n,
              active,
              mma ? "mma passes of " + passTokens : "CUDA cores"),
          ms,
          bytes / (ms * 1e6));
    }
    for (DeviceBuffer d : new DeviceBuffer[] {x, out, de, dw}) {
      d.close();
    }
  }

  /** The one-token rows with the shared experts (class comment). */
  private static void oneTokenWithShared(
      KernelBench b,
      RingmasterKernels k,
      CudaStream s,
      SplittableRandom random,
      DeviceBuffer w13,
      DeviceBuffer s13,
      DeviceBuffer w2,
      DeviceBuffer s2) {
    long guCodes = 2L * SHARED_INTER * HIDDEN;
    long downCodes = (long) HIDDEN * SHARED_INTER;
    int guScales = 2 * blocks(SHARED_INTER) * blocks(HIDDEN);
    int downScales = blocks(HIDDEN) * blocks(SHARED_INTER);
    DeviceBuffer gu = b.randomFp8Codes(SHARED_COPIES * guCodes);
    DeviceBuffer down = b.randomFp8Codes(SHARED_COPIES * downCodes);
    DeviceBuffer sgu = b.randomF32(SHARED_COPIES * guScales);
    DeviceBuffer sdown = b.randomF32(SHARED_COPIES * downScales);
    int routings = 8;
    RandomRoutings routed = RandomRoutings.of(random, routings, 1, EXPERTS, TOP_K);
    DeviceBuffer x = b.randomF32(HIDDEN);
    DeviceBuffer act = DeviceBuffer.allocate(4L * SHARED_INTER);
    DeviceBuffer out = DeviceBuffer.allocate(4L * HIDDEN);
    DeviceBuffer de = DeviceBuffer.allocate(4L * routed.experts().length);
    de.upload(s, routed.experts());
    DeviceBuffer dw = DeviceBuffer.allocate(4L * routed.weights().length);
    dw.upload(s, routed.weights());
    boolean firstBefore = k.quantWeightsFirst();
    try (MoeWorkspace ws = new MoeWorkspace(1, EXPERTS, TOP_K, HIDDEN, INTER)) {
      MoeKernels moe = k.moe();
      long pairBytes = 4L * TOP_K;
      double active = routed.activeTotal() / (double) routings;
      double bytes = active * 3.0 * HIDDEN * INTER + 3.0 * HIDDEN * SHARED_INTER;
      String[] names = {
        "shared as 2 launches before (one stream)",
        "shared inside the expert launches",
        "shared inside, weights first"
      };
      for (int variant = 0; variant < 3; variant++) {
        boolean inside = variant > 0;
        k.useQuantWeightsFirst(variant == 2);
        double ms =
            b.time(
                i -> {
                  int r = i % routings;
                  int c = i % SHARED_COPIES;
                  long guP = gu.ptr(c * guCodes);
                  long sguP = sgu.ptr(4L * c * guScales);
                  long downP = down.ptr(c * downCodes);
                  long sdownP = sdown.ptr(4L * c * downScales);
                  if (!inside) {
                    k.fp8().gemvSwiglu(s, act.ptr(), guP, sguP, x.ptr(), SHARED_INTER, HIDDEN, 1);
                    k.fp8()
                        .gemv(
                            s,
                            out.ptr(),
                            downP,
                            sdownP,
                            HIDDEN,
                            act.ptr(),
                            HIDDEN,
                            SHARED_INTER,
                            1);
                  }
                  moe.moeExpertPairsFp8(
                      s,
                      ws,
                      x.ptr(),
                      w13.ptr(),
                      s13.ptr(),
                      w2.ptr(),
                      s2.ptr(),
                      de.ptr(r * pairBytes),
                      dw.ptr(r * pairBytes),
                      1,
                      HIDDEN,
                      INTER,
                      false,
                      false,
                      MoeKernels.MOE_MMA_PASS_TOKENS,
                      inside
                          ? new MoeKernels.Fp8SharedExperts(
                              guP, sguP, SHARED_INTER, act.ptr(), downP, sdownP, HIDDEN, out.ptr())
                          : null);
                  moe.moeCombine(s, out.ptr(), ws.pairRowsPtr(), 1, HIDDEN, TOP_K, true);
                });
        b.row(
            String.format(
                Locale.ROOT,
                "moe fp8 V2-Lite layer batch 1 + 2 shared experts, %.1f experts active, %s",
                active,
                names[variant]),
            ms,
            bytes / (ms * 1e6));
      }
    } finally {
      k.useQuantWeightsFirst(firstBefore);
    }
    for (DeviceBuffer d : new DeviceBuffer[] {gu, down, sgu, sdown, x, act, out, de, dw}) {
      d.close();
    }
  }
}
