package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.lang.foreign.ValueLayout;

/**
 * The routed experts of a long prefill chunk as one cuBLAS GEMM per active expert: pairs grouped by
 * expert on the device, the expert offsets read back (one host sync per layer, so never inside a
 * graph), inputs gathered to bf16 in expert order, gate/up GEMMs, SiLU-mul, down GEMMs, outputs
 * scattered back to pair order with their routing weights and summed per token. The fused expert
 * kernels stream each expert once per 8 tokens and re-read activations per weight row, which is
 * right for decode and far too slow for thousands of tokens.
 */
final class GroupedExperts implements AutoCloseable {
  private final int numExperts;
  private final int topK;
  private final int hidden;
  private final int inter;
  private final DeviceBuffer xs;
  private final DeviceBuffer hs;
  private final DeviceBuffer act;
  private final DeviceBuffer actBf16;
  private final DeviceBuffer ys;
  private final HostBuffer offsets;
  private final boolean profile; // prints the experts' load and timings of the first calls
  private boolean loadReported;
  private int calls;

  GroupedExperts(int maxTokens, int numExperts, int topK, int hidden, int inter, boolean profile) {
    this.profile = profile;
    this.numExperts = numExperts;
    this.topK = topK;
    this.hidden = hidden;
    this.inter = inter;
    long pairs = (long) maxTokens * topK;
    xs = DeviceBuffer.allocate(2 * pairs * hidden);
    hs = DeviceBuffer.allocate(4 * pairs * 2 * inter);
    act = DeviceBuffer.allocate(4 * pairs * inter);
    actBf16 = DeviceBuffer.allocate(2 * pairs * inter);
    ys = DeviceBuffer.allocate(4 * pairs * hidden);
    offsets = HostBuffer.allocate(4L * (numExperts + 1));
  }

  long bytes() {
    return xs.bytes() + hs.bytes() + act.bytes() + actBf16.bytes() + ys.bytes();
  }

  /**
   * {@code out[t] (+)= sum_j weights[t, j] * expert_{ids[t, j]}(x[t])} for {@code n} tokens, {@code
   * w13}/{@code w2} stacked as for the fused kernels.
   */
  void forward(
      GpuOps ops,
      MoeWorkspace ws,
      long out,
      long x,
      long w13,
      long w2,
      long expertIds,
      long expertWeights,
      int n,
      boolean accumulate,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    int pairs = n * topK;
    k.moe().moeAlign(ops.stream, ws, expertIds, n);
    CudaDriverAccess.copyToHost(
        offsets.segment(), ws.offsetsPtr(), 4L * (numExperts + 1), ops.stream);
    k.moe().moeGatherBf16(ops.stream, xs.ptr(), x, ws.sortedPairsPtr(), pairs, topK, hidden);
    ops.stream.synchronize();
    mark.accept("moe.grouped.align_gather_sync");
    int[] off = new int[numExperts + 1];
    int largest = 0;
    for (int e = 0; e <= numExperts; e++) {
      off[e] = offsets.segment().getAtIndex(ValueLayout.JAVA_INT, e);
      if (e > 0) {
        largest = Math.max(largest, off[e] - off[e - 1]);
      }
    }
    if (profile && !loadReported) {
      loadReported = true;
      System.err.printf(
          "grouped experts: %d pairs, largest expert %d rows (mean %.1f)%n",
          pairs, largest, (double) pairs / numExperts);
    }
    long hostStart = System.nanoTime();
    long guBytes = 2L * 2 * inter * hidden;
    long downBytes = 2L * hidden * inter;
    for (int e = 0; e < numExperts; e++) {
      int rows = off[e + 1] - off[e];
      if (rows > 0) {
        ops.gemmBf16(
            hs.ptr(4L * off[e] * 2 * inter),
            xs.ptr(2L * off[e] * hidden),
            w13 + e * guBytes,
            rows,
            2 * inter,
            hidden);
      }
    }
    mark.accept("moe.grouped.gate_up_gemms");
    ops.siluMul(act.ptr(), hs.ptr(), pairs, inter);
    k.toBf16(ops.stream, actBf16.ptr(), act.ptr(), (long) pairs * inter);
    mark.accept("moe.grouped.silu");
    for (int e = 0; e < numExperts; e++) {
      int rows = off[e + 1] - off[e];
      if (rows > 0) {
        ops.gemmBf16(
            ys.ptr(4L * off[e] * hidden),
            actBf16.ptr(2L * off[e] * inter),
            w2 + e * downBytes,
            rows,
            hidden,
            inter);
      }
    }
    if (profile && ++calls <= 3) {
      System.err.printf(
          "grouped experts: host time to enqueue the GEMMs of one layer (call %d) %.3f ms%n",
          calls, (System.nanoTime() - hostStart) / 1e6);
    }
    mark.accept("moe.grouped.down_gemms");
    k.moe()
        .moeScatterWeighted(
            ops.stream,
            ws.pairRowsPtr(),
            ys.ptr(),
            ws.sortedPairsPtr(),
            expertWeights,
            pairs,
            hidden);
    k.moe().moeCombine(ops.stream, out, ws.pairRowsPtr(), n, hidden, topK, accumulate);
  }

  @Override
  public void close() {
    xs.close();
    hs.close();
    act.close();
    actBf16.close();
    ys.close();
    offsets.close();
  }
}
