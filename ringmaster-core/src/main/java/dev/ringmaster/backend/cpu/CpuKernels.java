package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import dev.ringmaster.runtime.KernelTuning;
import java.util.function.IntConsumer;
import jdk.incubator.vector.FloatVector;

/**
 * Process-wide settings of the CPU kernels: the float vector width they are compiled for and the
 * persistent thread pool they run on. They start at the preferred width (the widest the JIT
 * compiles to SIMD on this CPU) and one thread per core; {@link #apply} sets both from a run's
 * {@link KernelTuning} ({@code cpu-vector-bits}, {@code cpu-threads}) before its model loads.
 * Benchmarks and tests may change them between runs; widths above the preferred one still work, but
 * the Vector API then emulates them slowly.
 */
public final class CpuKernels {
  private static volatile int vectorBits = preferredVectorBits();
  private static volatile CpuThreadPool pool;

  private CpuKernels() {}

  /**
   * Sets the vector width and thread count from {@code tuning} (0 meaning the preferred width and
   * one thread per core); the thread pool is replaced only when its size changes.
   */
  public static synchronized void apply(KernelTuning tuning) {
    setVectorBits(tuning.cpuVectorBits());
    int threads =
        tuning.cpuThreads() == 0 ? Runtime.getRuntime().availableProcessors() : tuning.cpuThreads();
    if (threads != threads()) {
      setThreads(threads);
    }
  }

  /** The widest float vector, in bits, that the JIT compiles to SIMD instructions here. */
  public static int preferredVectorBits() {
    return FloatVector.SPECIES_PREFERRED.vectorBitSize();
  }

  /** The vector width the kernels use now, in bits. */
  public static int vectorBits() {
    return vectorBits;
  }

  /**
   * Sets the vector width: 128, 256 or 512 bits, or 0 for the preferred width. Takes effect for
   * calls that start afterwards.
   */
  public static void setVectorBits(int bits) {
    vectorBits = checkVectorBits(bits == 0 ? preferredVectorBits() : bits);
  }

  /** Number of threads a parallel region uses, the calling thread included. */
  public static int threads() {
    return pool().threads();
  }

  /** Replaces the thread pool by one of {@code threads} threads (the caller included). */
  public static synchronized void setThreads(int threads) {
    CpuThreadPool old = pool;
    pool = new CpuThreadPool(threads);
    if (old != null) {
      old.close();
    }
  }

  /**
   * Runs {@code body.accept(i)} for every {@code 0 <= i < tasks} on the pool and returns when all
   * are done. Tasks must be independent; the first exception a task throws is rethrown here. Nested
   * calls run serially.
   */
  public static void parallelFor(int tasks, IntConsumer body) {
    pool().run(tasks, body);
  }

  private static int checkVectorBits(int bits) {
    if (bits != 128 && bits != 256 && bits != 512) {
      throw new IllegalArgumentException(
          "vector width must be 128, 256 or 512 bits (or 0 for preferred), got " + bits);
    }
    return bits;
  }

  static RowKernel kernel(DType dtype) {
    return RowKernels.get(vectorBits, dtype);
  }

  static CpuThreadPool pool() {
    CpuThreadPool p = pool;
    if (p == null) {
      synchronized (CpuKernels.class) {
        if (pool == null) {
          pool = new CpuThreadPool(Runtime.getRuntime().availableProcessors());
        }
        p = pool;
      }
    }
    return p;
  }
}
