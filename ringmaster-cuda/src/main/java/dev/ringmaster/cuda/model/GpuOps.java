package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.blas.CublasHandle;
import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Fp8Kernels;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.runtime.KernelTuning;

/**
 * The operations the GPU model is written against, on one stream: the kernels plus the choice
 * between the decode GEMV (f32 activations, a few tokens) and cuBLAS (activations rounded to bf16,
 * many tokens), on which the GPU's model ops ({@link GpuModelOps}) are built. GPU thread only;
 * every pointer is a device pointer, activations f32 and row-major.
 */
final class GpuOps implements AutoCloseable {
  /**
   * The kernel choices of this model ({@code --kernel-option}; docs/cuda-performance.md has the
   * measurements behind the defaults): {@code fused-decode-ops} (decode-sized steps take {@link
   * #linear2}, the SwiGLU GEMV and the fused routing; every step MLA's norm-rope-append kernel),
   * {@code shared-expert-stream}, {@code combine-into-norm}, {@code moe-pair-tokens}, {@code
   * mla-fused-tokens}, {@code mla-fused-max-context}, {@code mla-fused-append} and the kernel
   * variants {@link RingmasterKernels} takes.
   */
  final KernelTuning tuning;

  final RingmasterKernels kernels;
  final CudaStream stream;

  /** A second stream for work that overlaps the main one within a step (joined before use). */
  final CudaStream side;

  private final CudaEvent fork;
  private final CudaEvent join;
  private final CublasHandle blas;
  private final DeviceBuffer xBf16;
  private final DeviceBuffer dequantized;
  private final DeviceBuffer fp8SplitPartials;
  private final int gemvMaxTokens;

  /**
   * Ops for batches of up to {@code maxTokens} tokens whose linear layers have at most {@code
   * maxInputs} input features, with the kernel choices of {@code tuning}; {@code
   * dequantMaxElements} sizes the bf16 scratch that a quantized linear is dequantized into for
   * steps beyond the GEMV (0: the model has no quantized linear outside its routed experts).
   */
  GpuOps(
      CudaStream stream,
      int maxTokens,
      int maxInputs,
      int gemvMaxTokens,
      KernelTuning tuning,
      long dequantMaxElements) {
    this.stream = stream;
    this.tuning = tuning;
    this.kernels = new RingmasterKernels(tuning);
    this.blas = new CublasHandle(stream);
    this.xBf16 = DeviceBuffer.allocate(2L * maxTokens * maxInputs);
    this.dequantized =
        dequantMaxElements == 0 ? null : DeviceBuffer.allocate(2 * dequantMaxElements);
    this.fp8SplitPartials =
        dequantMaxElements == 0 || maxTokens <= gemvMaxTokens
            ? null
            : DeviceBuffer.allocate(
                4
                    * Fp8Kernels.linearMmaMaxScratchFloats(
                        Math.min(maxTokens, Fp8Kernels.LINEAR_MMA_MAX_TOKENS)));
    this.gemvMaxTokens = gemvMaxTokens;
    this.side = CudaStream.create();
    this.fork = CudaEvent.createForOrdering();
    this.join = CudaEvent.createForOrdering();
  }

  /** Work queued on {@link #side} from now on starts after what the main stream has queued. */
  void forkSide() {
    fork.record(stream);
    side.waitFor(fork);
  }

  /** Work queued on the main stream from now on starts after what {@link #side} has queued. */
  void joinSide() {
    join.record(side);
    stream.waitFor(join);
  }

  /**
   * Bytes of scratch held (bf16 staging, the cuBLAS workspace, the bf16 copy of one quantized
   * linear and the FP8 tensor-core linear's split partials).
   */
  long scratchBytes() {
    return xBf16.bytes()
        + CublasHandle.WORKSPACE_BYTES
        + (dequantized == null ? 0 : dequantized.bytes())
        + (fp8SplitPartials == null ? 0 : fp8SplitPartials.bytes());
  }

  /**
   * {@code y[n, w.rows] = x[n, w.cols] . w^T (+ bias)}. An FP8 matrix takes the FP8 GEMV up to the
   * GEMV's token count, the FP8 tensor-core linear up to {@link Fp8Kernels#LINEAR_MMA_MAX_TOKENS}
   * (decode batches: the codes read once per 32 tokens); beyond, prefill chunks, it is dequantized
   * to bf16 scratch and multiplied by cuBLAS like a bf16 matrix (the copy costs a read of the FP8
   * bytes and a bf16 write per step, small against the GEMM). An NVFP4 matrix takes the NVFP4 GEMV
   * up to the GEMV's token count, else the same dequantized copy and cuBLAS.
   */
  void linear(long y, long x, DeviceMatrix w, int n) {
    if (w.nvfp4()) {
      linearNvfp4(stream, y, x, w, n);
    } else if (w.fp8()) {
      linearFp8(stream, y, x, w, n);
    } else if (n <= gemvMaxTokens) {
      kernels.gemv(stream, y, w.ptr(), x, w.rows(), w.cols(), n);
    } else {
      kernels.toBf16(stream, xBf16.ptr(), x, (long) n * w.cols());
      blas.linear(y, xBf16.ptr(), w.ptr(), n, w.rows(), w.cols(), false);
    }
    if (w.bias() != 0) {
      kernels.addBias(stream, y, w.bias(), n, w.rows());
    }
  }

  private void linearFp8(CudaStream s, long y, long x, DeviceMatrix w, int n) {
    if (n <= gemvMaxTokens) {
      kernels.fp8().gemv(s, y, w.ptr(), w.scales(), w.scalePartRows(), x, w.rows(), w.cols(), n);
      return;
    }
    if (n <= Fp8Kernels.LINEAR_MMA_MAX_TOKENS
        && fp8SplitPartials != null
        && Fp8Kernels.linearMmaSupports(w.cols(), w.scalePartRows())) {
      kernels
          .fp8()
          .linearMma(
              s,
              y,
              w.ptr(),
              w.scales(),
              w.scalePartRows(),
              x,
              w.rows(),
              w.cols(),
              n,
              fp8SplitPartials.ptr(),
              fp8SplitPartials.bytes() / 4);
      return;
    }
    checkScratch(w);
    kernels
        .fp8()
        .dequantToBf16(
            s, dequantized.ptr(), w.ptr(), w.scales(), w.scalePartRows(), w.rows(), w.cols());
    kernels.toBf16(s, xBf16.ptr(), x, (long) n * w.cols());
    blas.linear(y, xBf16.ptr(), dequantized.ptr(), n, w.rows(), w.cols(), false);
  }

  private void linearNvfp4(CudaStream s, long y, long x, DeviceMatrix w, int n) {
    if (n <= gemvMaxTokens) {
      kernels
          .nvfp4()
          .gemv(
              s,
              y,
              w.ptr(),
              w.scales(),
              w.globalScales(),
              w.scalePartRows(),
              x,
              w.rows(),
              w.cols(),
              n);
      return;
    }
    checkScratch(w);
    kernels
        .nvfp4()
        .dequantToBf16(
            s,
            dequantized.ptr(),
            w.ptr(),
            w.scales(),
            w.globalScales(),
            w.scalePartRows(),
            w.rows(),
            w.cols());
    kernels.toBf16(s, xBf16.ptr(), x, (long) n * w.cols());
    blas.linear(y, xBf16.ptr(), dequantized.ptr(), n, w.rows(), w.cols(), false);
  }

  private void checkScratch(DeviceMatrix w) {
    if (dequantized == null || 2L * w.rows() * w.cols() > dequantized.bytes()) {
      throw new IllegalStateException(
          "quantized matrix ["
              + w.rows()
              + ", "
              + w.cols()
              + "] exceeds the dequantization scratch");
    }
  }

  /**
   * {@code y1 = x . w1^T} and {@code y2 = x . w2^T} for {@code n} tokens of the same {@code x}: one
   * GEMV launch where both run as GEMVs without bias and share a format (bf16, FP8 or NVFP4), else
   * two {@link #linear} calls.
   */
  void linear2(long y1, DeviceMatrix w1, long y2, DeviceMatrix w2, long x, int n) {
    boolean fusable = fusedDecode(n) && w1.bias() == 0 && w2.bias() == 0 && w1.cols() == w2.cols();
    if (fusable && !w1.quantized() && !w2.quantized()) {
      kernels.gemv2(stream, y1, w1.ptr(), w1.rows(), y2, w2.ptr(), w2.rows(), x, w1.cols(), n);
    } else if (fusable && w1.fp8() && w2.fp8()) {
      kernels
          .fp8()
          .gemv2(
              stream,
              y1,
              w1.ptr(),
              w1.scales(),
              w1.scalePartRows(),
              w1.rows(),
              y2,
              w2.ptr(),
              w2.scales(),
              w2.scalePartRows(),
              w2.rows(),
              x,
              w1.cols(),
              n);
    } else if (fusable && w1.nvfp4() && w2.nvfp4()) {
      kernels
          .nvfp4()
          .gemv2(
              stream,
              y1,
              w1.ptr(),
              w1.scales(),
              w1.globalScales(),
              w1.scalePartRows(),
              w1.rows(),
              y2,
              w2.ptr(),
              w2.scales(),
              w2.globalScales(),
              w2.scalePartRows(),
              w2.rows(),
              x,
              w1.cols(),
              n);
    } else {
      linear(y1, x, w1, n);
      linear(y2, x, w2, n);
    }
  }

  /**
   * Whether a decode-sized step computes the router logits of {@code gate} and routes in one launch
   * ({@link dev.ringmaster.cuda.kernels.SmallBatchMoe#routerRoute}).
   */
  boolean fusedRouting(DeviceMatrix gate, int n) {
    return fusedDecode(n) && gate.bias() == 0 && !gate.quantized();
  }

  /** Whether a step of {@code n} tokens runs its routed experts from the routed pairs. */
  boolean pairExperts(int n) {
    return fusedDecode(n) && n <= tuning.moePairTokens();
  }

  /** Whether a step of {@code n} tokens takes the fused decode launches. */
  boolean fusedDecode(int n) {
    return tuning.fusedDecodeOps() && n <= gemvMaxTokens;
  }

  /** The stream's cuBLAS handle, for products that {@link #linear} does not cover. */
  CublasHandle blas() {
    return blas;
  }

  /** {@code y[n, m] = xb[n, k] . W[m, k]^T} with bf16 {@code xb} and {@code W} (cuBLAS). */
  void gemmBf16(long y, long xb, long w, int n, int m, int k) {
    blas.linear(y, xb, w, n, m, k, false);
  }

  /** {@code out = rmsnorm(x) * weight} over contiguous rows of {@code dim}. */
  void rmsNorm(long out, long x, long weight, int rows, int dim, float eps) {
    kernels.rmsNorm(stream, out, dim, 0, 0, x, dim, weight, rows, dim, eps);
  }

  /** {@code residual += x; out = rmsnorm(residual) * weight} over contiguous rows. */
  void addRmsNorm(long out, long residual, long x, long weight, int rows, int dim, float eps) {
    kernels.rmsNorm(stream, out, dim, residual, dim, x, dim, weight, rows, dim, eps);
  }

  /** RMSNorm in place of the first {@code dim} values of rows {@code stride} apart. */
  void rmsNormPrefix(long x, int stride, long weight, int rows, int dim, float eps) {
    kernels.rmsNorm(stream, x, stride, 0, 0, x, stride, weight, rows, dim, eps);
  }

  /** {@code out[r, :inter] = silu(gateUp[r, :inter]) * gateUp[r, inter:]}. */
  void siluMul(long out, long gateUp, int rows, int inter) {
    kernels.siluMul(stream, out, inter, gateUp, gateUp + 4L * inter, 2 * inter, rows, inter);
  }

  /** A SwiGLU MLP: {@code out = down(silu(gate x) * up x)}. */
  void swiglu(long out, long x, KernelWeights.DenseWeights w, long gateUp, long act, int n) {
    if (gemvSwiglu(w, n)) {
      swigluGemv(stream, out, x, w, act, n);
      return;
    }
    DeviceMatrix gu = w.gateUp();
    if (fp8MmaSwiglu(gu, n)) {
      // The split sum applies SiLU-and-mul itself: one launch and one round trip fewer.
      kernels
          .fp8()
          .linearMmaSwiglu(
              stream,
              act,
              gu.ptr(),
              gu.scales(),
              gu.scalePartRows(),
              x,
              w.inter(),
              gu.cols(),
              n,
              fp8SplitPartials.ptr(),
              fp8SplitPartials.bytes() / 4);
    } else {
      linear(gateUp, x, gu, n);
      siluMul(act, gateUp, n, w.inter());
    }
    linear(out, act, w.down(), n);
  }

  /**
   * Whether the FP8 gate|up matrix {@code gu} at {@code n} tokens takes {@link
   * Fp8Kernels#linearMmaSwiglu} ({@code fp8-mma-swiglu}): the tensor-core FP8 linear's step sizes,
   * a K-split matrix without bias.
   */
  private boolean fp8MmaSwiglu(DeviceMatrix gu, int n) {
    return tuning.fp8MmaSwiglu()
        && gu.fp8()
        && gu.bias() == 0
        && n > gemvMaxTokens
        && n <= Fp8Kernels.LINEAR_MMA_MAX_TOKENS
        && fp8SplitPartials != null
        && Fp8Kernels.linearMmaSupports(gu.cols(), gu.scalePartRows())
        && Fp8Kernels.linearMmaSplits(gu.rows(), gu.cols()) > 1;
  }

  /**
   * Whether {@link #swigluGemv} takes this MLP at {@code n} tokens (fused, bias-free GEMVs, bf16,
   * FP8 or NVFP4).
   */
  boolean gemvSwiglu(KernelWeights.DenseWeights w, int n) {
    return fusedDecode(n) && w.gateUp().bias() == 0 && w.down().bias() == 0;
  }

  /**
   * A SwiGLU MLP as two GEMV launches on {@code s} (the gate|up one with SiLU-and-mul fused), each
   * the bf16, FP8 or NVFP4 kernel as its matrix is stored: for decode-sized steps of bias-free
   * weights, needing no cuBLAS handle, so any stream can run it.
   */
  void swigluGemv(CudaStream s, long out, long x, KernelWeights.DenseWeights w, long act, int n) {
    DeviceMatrix gateUp = w.gateUp();
    DeviceMatrix down = w.down();
    if (gateUp.quantized() && gateUp.scalePartRows() != w.inter()) {
      throw new IllegalStateException(
          "quantized gate|up scales in parts of "
              + gateUp.scalePartRows()
              + " rows, the SwiGLU GEMV needs parts of inter = "
              + w.inter());
    }
    if (gateUp.nvfp4()) {
      kernels
          .nvfp4()
          .gemvSwiglu(
              s,
              act,
              gateUp.ptr(),
              gateUp.scales(),
              gateUp.globalScales(),
              x,
              w.inter(),
              gateUp.cols(),
              n);
    } else if (gateUp.fp8()) {
      kernels
          .fp8()
          .gemvSwiglu(s, act, gateUp.ptr(), gateUp.scales(), x, w.inter(), gateUp.cols(), n);
    } else {
      kernels.gemvSwiglu(s, act, gateUp.ptr(), x, w.inter(), gateUp.cols(), n);
    }
    if (down.nvfp4()) {
      kernels
          .nvfp4()
          .gemv(
              s,
              out,
              down.ptr(),
              down.scales(),
              down.globalScales(),
              down.scalePartRows(),
              act,
              down.rows(),
              down.cols(),
              n);
    } else if (down.fp8()) {
      kernels
          .fp8()
          .gemv(
              s,
              out,
              down.ptr(),
              down.scales(),
              down.scalePartRows(),
              act,
              down.rows(),
              down.cols(),
              n);
    } else {
      kernels.gemv(s, out, down.ptr(), act, down.rows(), down.cols(), n);
    }
  }

  /** Gathers embedding rows of {@code n} token ids. */
  void embedding(long out, DeviceMatrix table, long ids, int n) {
    kernels.embedding(stream, out, table.ptr(), ids, n, table.cols());
  }

  @Override
  public void close() {
    join.close();
    fork.close();
    side.close();
    xBf16.close();
    if (dequantized != null) {
      dequantized.close();
    }
    if (fp8SplitPartials != null) {
      fp8SplitPartials.close();
    }
    blas.close();
    kernels.close();
  }
}
