package dev.ringmaster.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Products of activations with weight matrices on the CPU: {@code out[n][rows] = x[n][cols] · W^T}.
 * This is the hot loop of CPU inference (weight streaming), so it is vectorised and parallel.
 *
 * <p>Weights are read straight from their segment in their own dtype and widened to f32 in
 * registers; sums accumulate in f32. Quantized weights (FP8, NVFP4) are decoded to f32 in vectors a
 * group of rows at a time, exactly as {@link Dequantizer} decodes them, and then take the f32 path.
 * Each weight row is read from memory once per call whatever the number of tokens, so a batch of
 * tokens costs little more than one token. Output rows are split into chunks run on the thread pool
 * of the caller's {@link CpuKernelContext}; products too small to repay a parallel region stay on
 * the calling thread ({@link ParallelCostModel}). Results do not depend on the thread count or on
 * the batch size.
 */
public final class CpuMatmul {
  private CpuMatmul() {}

  /**
   * One product for {@link #matmulMany}: {@code out[t][r] = sum_c x[xRows[t]][c] * W[r][c]}.
   *
   * @param w the weight matrix
   * @param x token inputs, rows of {@code w.cols()} floats; only rows listed in {@code xRows} are
   *     read
   * @param xRows which rows of {@code x} are this job's tokens, in output order
   * @param out outputs, {@code xRows.length * w.rows()} floats, token-major (other jobs running in
   *     the same call must not write to the same region)
   */
  public record Job(CpuMatrix w, float[] x, int[] xRows, float[] out) {
    /** Checks the sizes and row indices. */
    public Job {
      int cols = w.cols();
      for (int row : xRows) {
        if (row < 0 || (long) (row + 1) * cols > x.length) {
          throw new IllegalArgumentException(
              "token row "
                  + row
                  + " is outside x ("
                  + x.length
                  + " floats of "
                  + cols
                  + " per row)");
        }
      }
      if ((long) xRows.length * w.rows() > out.length) {
        throw new IllegalArgumentException(
            "out has " + out.length + " floats, needs " + (long) xRows.length * w.rows());
      }
    }

    /** A job over the first {@code n} rows of {@code x}, as {@link CpuMatmul#matmul} computes. */
    public static Job of(CpuMatrix w, float[] x, int n, float[] out) {
      int[] rows = new int[n];
      for (int t = 0; t < n; t++) {
        rows[t] = t;
      }
      return new Job(w, x, rows, out);
    }

    /** Number of tokens. */
    public int n() {
      return xRows.length;
    }
  }

  /**
   * Computes {@code out[t*w.rows() + r] = sum_c x[t*w.cols() + c] * W[r][c]} for {@code t < n}.
   *
   * @param kernels the vector width and thread pool to run with
   * @param out output, at least {@code n * w.rows()} floats
   * @param x input, {@code n * w.cols()} floats, row-major
   * @param n number of token rows
   * @param w the weight matrix
   */
  public static void matmul(CpuKernelContext kernels, float[] out, float[] x, int n, CpuMatrix w) {
    if (n < 0) {
      throw new IllegalArgumentException("n must not be negative, got " + n);
    }
    matmulMany(kernels, List.of(Job.of(w, x, n, out)));
  }

  /**
   * Runs several products in one parallel region, for example the routed experts of one MoE step
   * with their token lists: all cores share the work even when each expert is small.
   */
  public static void matmulMany(CpuKernelContext kernels, List<Job> jobs) {
    CpuThreadPool pool = kernels.pool();
    MatmulPlan plan = MatmulPlan.of(jobs, kernels);
    long t0 = System.nanoTime();
    boolean shared = false;
    if (plan.parallel()) {
      shared = pool.run(plan.chunks(), plan::runChunk);
    } else {
      for (int i = 0; i < plan.chunks(); i++) {
        plan.runChunk(i);
      }
    }
    pool.costModel().observe(plan.cost(), System.nanoTime() - t0, shared);
  }

  /**
   * Runs {@code jobs} on the calling thread, asking nothing of the pool or its cost model: for
   * products inside the tasks of a region that is already parallel (each task a whole small MLP).
   * The results are those of {@link #matmulMany}.
   */
  public static void matmulHere(CpuKernelContext kernels, List<Job> jobs) {
    MatmulPlan plan = MatmulPlan.of(jobs, kernels, false);
    for (int i = 0; i < plan.chunks(); i++) {
      plan.runChunk(i);
    }
  }

  /**
   * Converts row {@code row} of {@code w} to f32 into {@code dst} from {@code dstOffset}, exactly
   * (an embedding lookup), with the kernel of {@code kernels}' vector width.
   */
  public static void loadRow(
      CpuKernelContext kernels, CpuMatrix w, int row, float[] dst, int dstOffset) {
    if (row < 0 || row >= w.rows()) {
      throw new IndexOutOfBoundsException("row " + row + " of " + w.rows());
    }
    if (w.quantized()) {
      checkSegment(w.data());
      kernels.quantizedKernel(w.dtype()).decodeRow(w, row, dst, dstOffset);
      return;
    }
    checkSegment(w.data());
    kernels.kernel(w.dtype()).toFloats(w.data(), (long) row * w.cols(), dst, dstOffset, w.cols());
  }

  /** The Vector API reads heap segments only when they wrap a {@code byte[]}. */
  static void checkSegment(MemorySegment data) {
    if (data.heapBase().isPresent() && !(data.heapBase().get() instanceof byte[])) {
      throw new IllegalArgumentException(
          "weight segments must be native, mapped or byte[]-backed, not " + data);
    }
  }
}
