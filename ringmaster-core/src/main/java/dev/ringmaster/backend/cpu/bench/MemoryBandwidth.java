package dev.ringmaster.backend.cpu.bench;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.DoubleAdder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Measures memory read bandwidth the way a matmul sees it: a vectorised sum of a native buffer much
 * larger than the caches, split over the threads of a {@link CpuKernelContext}.
 */
public final class MemoryBandwidth {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;

  private MemoryBandwidth() {}

  /**
   * Read bandwidth in GB/s (10^9 bytes per second).
   *
   * @param allThreads best of the repeats, all pool threads reading
   * @param oneThread best of the repeats, the calling thread alone
   * @param bufferBytes size of the buffer read
   */
  public record Result(double allThreads, double oneThread, long bufferBytes) {}

  /** Sums a buffer of {@code bufferBytes} {@code repeats} times per mode; keeps the best time. */
  public static Result measure(CpuKernelContext kernels, long bufferBytes, int repeats) {
    long bytes = bufferBytes / 4096 * 4096;
    try (Arena arena = Arena.ofShared()) {
      MemorySegment buffer = arena.allocate(bytes, 64);
      buffer.fill((byte) 1); // touch every page before timing
      int tasks = kernels.threads() * 4;
      long slice = bytes / tasks / 64 * 64;
      DoubleAdder sink = new DoubleAdder();
      double all = 0;
      double one = 0;
      for (int i = 0; i < repeats; i++) {
        long start = System.nanoTime();
        kernels.parallelFor(
            tasks, t -> sink.add(sum(buffer, t * slice, t == tasks - 1 ? bytes : (t + 1) * slice)));
        all = Math.max(all, bytes / (double) (System.nanoTime() - start));
        start = System.nanoTime();
        sink.add(sum(buffer, 0, bytes));
        one = Math.max(one, bytes / (double) (System.nanoTime() - start));
      }
      if (sink.sum() == 42) {
        System.out.print(""); // keeps the sums alive
      }
      return new Result(all, one, bytes);
    }
  }

  private static float sum(MemorySegment buffer, long from, long to) {
    FloatVector a = FloatVector.zero(F);
    FloatVector b = a;
    FloatVector c = a;
    FloatVector d = a;
    long step = F.vectorByteSize();
    long bound = from + (to - from) / (4 * step) * (4 * step);
    long i = from;
    for (; i < bound; i += 4 * step) {
      a = a.add(FloatVector.fromMemorySegment(F, buffer, i, ByteOrder.LITTLE_ENDIAN));
      b = b.add(FloatVector.fromMemorySegment(F, buffer, i + step, ByteOrder.LITTLE_ENDIAN));
      c = c.add(FloatVector.fromMemorySegment(F, buffer, i + 2 * step, ByteOrder.LITTLE_ENDIAN));
      d = d.add(FloatVector.fromMemorySegment(F, buffer, i + 3 * step, ByteOrder.LITTLE_ENDIAN));
    }
    float s = a.add(b).add(c).add(d).reduceLanes(VectorOperators.ADD);
    for (; i + 4 <= to; i += 4) {
      s += buffer.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i);
    }
    return s;
  }
}
