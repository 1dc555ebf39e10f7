package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.util.Locale;
import java.util.function.IntConsumer;
import jdk.incubator.vector.FloatVector;

/**
 * Process-wide settings of the CPU kernels: the float vector width they are compiled for and the
 * persistent thread pool they run on.
 *
 * <p>Both start from system properties, read once: {@value #VECTOR_BITS_PROPERTY} ({@code 128},
 * {@code 256}, {@code 512} or {@code preferred}, the default: the widest the JIT compiles to SIMD
 * on this CPU) and {@value #THREADS_PROPERTY} (default: available processors). Both can be changed
 * later, for example by a benchmark; widths above the preferred one still work, but the Vector API
 * then emulates them slowly.
 */
public final class CpuKernels {
  /** System property selecting the vector width in bits. */
  public static final String VECTOR_BITS_PROPERTY = "ringmaster.cpu.vectorBits";

  /** System property selecting the number of threads (the calling thread included). */
  public static final String THREADS_PROPERTY = "ringmaster.cpu.threads";

  private static volatile int vectorBits =
      parseVectorBits(System.getProperty(VECTOR_BITS_PROPERTY));
  private static volatile CpuThreadPool pool;

  private CpuKernels() {}

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

  /** Parses a {@value #VECTOR_BITS_PROPERTY} value; null or {@code preferred} mean preferred. */
  static int parseVectorBits(String value) {
    if (value == null || value.isBlank()) {
      return preferredVectorBits();
    }
    String v = value.strip().toLowerCase(Locale.ROOT);
    if (v.equals("preferred") || v.equals("max")) {
      return preferredVectorBits();
    }
    try {
      return checkVectorBits(Integer.parseInt(v));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          VECTOR_BITS_PROPERTY + " must be 128, 256, 512 or preferred, got '" + value + "'", e);
    }
  }

  private static int checkVectorBits(int bits) {
    if (bits != 128 && bits != 256 && bits != 512) {
      throw new IllegalArgumentException(
          "vector width must be 128, 256 or 512 bits (or preferred), got " + bits);
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
          pool = new CpuThreadPool(defaultThreads());
        }
        p = pool;
      }
    }
    return p;
  }

  private static int defaultThreads() {
    String value = System.getProperty(THREADS_PROPERTY);
    if (value == null || value.isBlank()) {
      return Runtime.getRuntime().availableProcessors();
    }
    try {
      int threads = Integer.parseInt(value.strip());
      if (threads >= 1) {
        return threads;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(
        THREADS_PROPERTY + " must be a positive integer, got '" + value + "'");
  }
}
