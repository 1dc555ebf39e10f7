package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * How one {@link CpuMatmul#matmulMany} call is cut into chunks of output rows. Chunk sizes follow
 * the cost of a job's rows so that all threads get similar work; products too small to repay a
 * parallel region (as the pool's {@link ParallelCostModel} judges from this machine's timings), or
 * whose weights only the calling thread may read, run on the calling thread.
 */
final class MatmulPlan {
  /** Chunks per thread, so that uneven progress still balances out. */
  private static final int CHUNKS_PER_THREAD = 4;

  /**
   * Chunks start on multiples of this many rows, and are at least this big; a multiple of every
   * vector's lanes, so chunks start on the packed kernels' row blocks.
   */
  private static final int ROW_QUANTUM = 16;

  private final RowKernel[] kernels;
  // Each quantized job's row decoder, else null (also for the reference decode).
  private final QuantizedRowKernel[] quantized;
  private final CpuMatmul.Job[] jobs;
  // Each bf16 job's weights in the packed layout of its kernel, else null.
  private final MemorySegment[] packed;
  private final int[][] xOffsets;
  private final int[][] outOffsets;
  private final int[] chunkJob;
  private final int[] chunkStart;
  private final int[] chunkEnd;
  private final boolean parallel;
  private final double cost;

  private MatmulPlan(
      RowKernel[] kernels,
      QuantizedRowKernel[] quantized,
      CpuMatmul.Job[] jobs,
      MemorySegment[] packed,
      int[][] xOffsets,
      int[][] outOffsets,
      int[] chunkJob,
      int[] chunkStart,
      int[] chunkEnd,
      boolean parallel,
      double cost) {
    this.kernels = kernels;
    this.quantized = quantized;
    this.jobs = jobs;
    this.packed = packed;
    this.xOffsets = xOffsets;
    this.outOffsets = outOffsets;
    this.chunkJob = chunkJob;
    this.chunkStart = chunkStart;
    this.chunkEnd = chunkEnd;
    this.parallel = parallel;
    this.cost = cost;
  }

  static MatmulPlan of(List<CpuMatmul.Job> jobList, CpuKernelContext context) {
    return of(jobList, context, true);
  }

  /**
   * The plan of {@code jobList}; with {@code mayShare} false it runs on the calling thread and asks
   * nothing of the cost model (a product inside a task of a parallel region).
   */
  static MatmulPlan of(List<CpuMatmul.Job> jobList, CpuKernelContext context, boolean mayShare) {
    CpuThreadPool pool = context.pool();
    int threads = pool.threads();
    // A plain loop, not a stream: decode steps build hundreds of plans per token.
    int kept = 0;
    for (CpuMatmul.Job j : jobList) {
      kept += j.n() > 0 && j.w().rows() > 0 ? 1 : 0;
    }
    CpuMatmul.Job[] jobs = new CpuMatmul.Job[kept];
    int k = 0;
    for (CpuMatmul.Job j : jobList) {
      if (j.n() > 0 && j.w().rows() > 0) {
        jobs[k++] = j;
      }
    }
    RowKernel[] kernels = new RowKernel[jobs.length];
    QuantizedRowKernel[] quantized = new QuantizedRowKernel[jobs.length];
    MemorySegment[] packed = new MemorySegment[jobs.length];
    int[][] xOffsets = new int[jobs.length][];
    int[][] outOffsets = new int[jobs.length][];
    double[] rowCost = new double[jobs.length];
    double total = 0;
    boolean shared = true;
    for (int j = 0; j < jobs.length; j++) {
      CpuMatmul.Job job = jobs[j];
      CpuMatmul.checkSegment(job.w().data());
      // Quantized weights are decoded to f32 rows first (QuantizedRows), then use the f32 kernel.
      kernels[j] = context.kernel(job.w().quantized() ? DType.F32 : job.w().dtype());
      if (job.w().quantized() && !context.referenceDequantization()) {
        quantized[j] = context.quantizedKernel(job.w().dtype());
      }
      shared &= pool.canShare(job.w().data());
      if (job.w().dtype() == DType.BF16 && !job.w().quantized()) {
        // The packed copy outlives the mapping; a closed model must still fail as it did.
        if (!job.w().data().scope().isAlive()) {
          throw new IllegalStateException("the weights' memory is already closed");
        }
        packed[j] = job.w().packedBf16(kernels[j].lanes());
      }
      int cols = job.w().cols();
      int rows = job.w().rows();
      int n = job.n();
      xOffsets[j] = new int[n];
      outOffsets[j] = new int[n];
      for (int t = 0; t < n; t++) {
        xOffsets[j][t] = job.xRows()[t] * cols;
        outOffsets[j][t] = t * rows;
      }
      // Streaming a row costs about the same for 1 to 4 tokens; beyond, arithmetic grows with n.
      rowCost[j] = (double) cols * Math.max(1, n / 4.0);
      total += rowCost[j] * rows;
    }
    int chunks = 0;
    int[] perJob = new int[jobs.length];
    int[] rowsPerChunk = new int[jobs.length];
    boolean serial = !mayShare || threads == 1 || !shared || !pool.costModel().parallel(total);
    double target = total / ((double) threads * CHUNKS_PER_THREAD);
    for (int j = 0; j < jobs.length; j++) {
      int rows = jobs[j].w().rows();
      if (serial) {
        rowsPerChunk[j] = rows;
      } else {
        int size = (int) Math.min(rows, Math.ceil(target / rowCost[j]));
        size = Math.max(ROW_QUANTUM, (size + ROW_QUANTUM - 1) / ROW_QUANTUM * ROW_QUANTUM);
        rowsPerChunk[j] = Math.min(rows, size);
      }
      perJob[j] = (rows + rowsPerChunk[j] - 1) / rowsPerChunk[j];
      chunks += perJob[j];
    }
    int[] chunkJob = new int[chunks];
    int[] chunkStart = new int[chunks];
    int[] chunkEnd = new int[chunks];
    int c = 0;
    for (int j = 0; j < jobs.length; j++) {
      int rows = jobs[j].w().rows();
      for (int r = 0; r < rows; r += rowsPerChunk[j]) {
        chunkJob[c] = j;
        chunkStart[c] = r;
        chunkEnd[c] = Math.min(rows, r + rowsPerChunk[j]);
        c++;
      }
    }
    return new MatmulPlan(
        kernels,
        quantized,
        jobs,
        packed,
        xOffsets,
        outOffsets,
        chunkJob,
        chunkStart,
        chunkEnd,
        !serial,
        total);
  }

  /** The work of the call in cost units: weight elements, scaled up for large batches. */
  double cost() {
    return cost;
  }

  /** Number of chunks. */
  int chunks() {
    return chunkJob.length;
  }

  /** Whether the chunks should run on the thread pool rather than the calling thread. */
  boolean parallel() {
    return parallel;
  }

  /** Computes chunk {@code i}: a range of output rows of one job, for all its tokens. */
  void runChunk(int i) {
    int j = chunkJob[i];
    CpuMatmul.Job job = jobs[j];
    if (job.w().quantized()) {
      QuantizedRows.rows(
          quantized[j],
          kernels[j],
          job.w(),
          chunkStart[i],
          chunkEnd[i],
          job.x(),
          xOffsets[j],
          job.out(),
          outOffsets[j]);
      return;
    }
    if (packed[j] != null) {
      kernels[j].packedRows(
          packed[j],
          job.w().rows(),
          job.w().cols(),
          chunkStart[i],
          chunkEnd[i],
          job.x(),
          xOffsets[j],
          job.out(),
          outOffsets[j]);
      return;
    }
    kernels[j].rows(
        job.w().data(),
        job.w().cols(),
        chunkStart[i],
        chunkEnd[i],
        job.x(),
        xOffsets[j],
        job.out(),
        outOffsets[j]);
  }
}
