package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import dev.ringmaster.runtime.KernelTuning;
import java.util.function.IntConsumer;
import jdk.incubator.vector.FloatVector;

/**
 * The settings the CPU kernels of one model run with, fixed when it is made: the float vector width
 * the kernels are compiled for and a persistent thread pool this context owns. A CPU model gets its
 * context when it loads (from the run's {@link KernelTuning}: {@code cpu-vector-bits}, {@code
 * cpu-threads}) and hands it to its layers; closing the context stops its threads. Widths above the
 * preferred one still work, but the Vector API then emulates them slowly.
 *
 * <p>{@link #shared()} is one process-wide context with the preferred width and one thread per
 * core, made on first use; nothing can change it and {@link #close} leaves it running.
 */
public final class CpuKernelContext implements AutoCloseable {
  private static final class Shared {
    static final CpuKernelContext INSTANCE = new CpuKernelContext(0, 0, true);
  }

  private final int vectorBits;
  private final CpuThreadPool pool;
  private final boolean shared;
  private final boolean referenceDequantization;
  // The kernels by dtype ordinal, looked up once: plans ask for them on every product.
  private final RowKernel[] kernels = new RowKernel[DType.values().length];
  private final QuantizedRowKernel[] quantizedKernels =
      new QuantizedRowKernel[DType.values().length];

  /**
   * A context with its own pool.
   *
   * @param vectorBits 128, 256 or 512, or 0 for the {@linkplain #preferredVectorBits preferred}
   *     width
   * @param threads threads of a parallel region, the calling thread included, or 0 for one per core
   */
  public CpuKernelContext(int vectorBits, int threads) {
    this(vectorBits, threads, false, false);
  }

  private CpuKernelContext(int vectorBits, int threads, boolean shared) {
    this(vectorBits, threads, shared, false);
  }

  private CpuKernelContext(
      int vectorBits, int threads, boolean shared, boolean referenceDequantization) {
    this.vectorBits = checkVectorBits(vectorBits == 0 ? preferredVectorBits() : vectorBits);
    if (threads < 0) {
      throw new IllegalArgumentException(
          "CPU kernel threads must be at least 1 (or 0 for one per core), got " + threads);
    }
    this.pool = new CpuThreadPool(threads == 0 ? cores() : threads);
    this.shared = shared;
    this.referenceDequantization = referenceDequantization;
  }

  /**
   * For benchmarks only: a context (with its own pool, as {@link #CpuKernelContext(int, int)})
   * whose products over quantized weights decode rows with the scalar {@link Dequantizer} into a
   * heap block, the form the vector decoders replaced. Its results are the same bits.
   */
  public static CpuKernelContext withReferenceDequantization(int vectorBits, int threads) {
    return new CpuKernelContext(vectorBits, threads, false, true);
  }

  /** The process-wide context: preferred width, one thread per core; never closed. */
  public static CpuKernelContext shared() {
    return Shared.INSTANCE;
  }

  /**
   * The context {@code tuning} asks for: the {@linkplain #shared() shared} one where that has the
   * same width and thread count (so models loaded with default settings share one pool), else a new
   * one that the caller closes.
   */
  public static CpuKernelContext of(KernelTuning tuning) {
    int bits = tuning.cpuVectorBits() == 0 ? preferredVectorBits() : tuning.cpuVectorBits();
    int threads = tuning.cpuThreads() == 0 ? cores() : tuning.cpuThreads();
    if (bits == preferredVectorBits() && threads == cores()) {
      return shared();
    }
    return new CpuKernelContext(bits, threads);
  }

  /** The widest float vector, in bits, that the JIT compiles to SIMD instructions here. */
  public static int preferredVectorBits() {
    return FloatVector.SPECIES_PREFERRED.vectorBitSize();
  }

  /** The vector width of this context's kernels, in bits. */
  public int vectorBits() {
    return vectorBits;
  }

  /** Number of threads a parallel region uses, the calling thread included. */
  public int threads() {
    return pool.threads();
  }

  /**
   * Runs {@code body.accept(i)} for every {@code 0 <= i < tasks} on the pool and returns when all
   * are done. Tasks must be independent; the first exception a task throws is rethrown here. Nested
   * calls run serially.
   */
  public void parallelFor(int tasks, IntConsumer body) {
    pool.run(tasks, body);
  }

  /** Stops the pool's threads, unless this is the {@linkplain #shared() shared} context. */
  @Override
  public void close() {
    if (!shared) {
      pool.close();
    }
  }

  @Override
  public String toString() {
    return "CpuKernelContext[" + vectorBits + "-bit vectors, " + threads() + " threads]";
  }

  RowKernel kernel(DType dtype) {
    RowKernel k = kernels[dtype.ordinal()];
    if (k == null) {
      k = RowKernels.get(vectorBits, dtype);
      kernels[dtype.ordinal()] = k; // racy but idempotent: the cache returns one kernel per spec
    }
    return k;
  }

  /** The vector row decoder for quantized codes of {@code dtype} (F8_E4M3 or U8). */
  QuantizedRowKernel quantizedKernel(DType dtype) {
    QuantizedRowKernel k = quantizedKernels[dtype.ordinal()];
    if (k == null) {
      k = RowKernels.quantized(vectorBits, dtype);
      quantizedKernels[dtype.ordinal()] = k; // racy but idempotent, as for kernel()
    }
    return k;
  }

  /**
   * Whether quantized rows take the scalar reference decode ({@link #withReferenceDequantization}).
   */
  boolean referenceDequantization() {
    return referenceDequantization;
  }

  CpuThreadPool pool() {
    return pool;
  }

  private static int cores() {
    return Runtime.getRuntime().availableProcessors();
  }

  private static int checkVectorBits(int bits) {
    if (bits != 128 && bits != 256 && bits != 512) {
      throw new IllegalArgumentException(
          "vector width must be 128, 256 or 512 bits (or 0 for preferred), got " + bits);
    }
    return bits;
  }
}
