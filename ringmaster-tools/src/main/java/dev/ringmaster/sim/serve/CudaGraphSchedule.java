package dev.ringmaster.sim.serve;

import java.util.ArrayList;
import java.util.List;

/**
 * Batch sizes captured as CUDA graphs up to a maximum, SGLang's default schedule: 1, 2, 4, 8, then
 * every 8 up to 256, every 16 up to 512, every 32 beyond.
 */
public final class CudaGraphSchedule {
  private CudaGraphSchedule() {}

  /** Captured batch sizes, ascending, the last one {@code maxBs}. */
  public static List<Integer> capturedSizes(int maxBs) {
    List<Integer> out = new ArrayList<>();
    for (int b : new int[] {1, 2, 4, 8}) {
      if (b <= maxBs) {
        out.add(b);
      }
    }
    for (int b = 16; b <= maxBs; b += b < 256 ? 8 : b < 512 ? 16 : 32) {
      out.add(b);
    }
    if (out.isEmpty() || out.get(out.size() - 1) != maxBs) {
      out.add(maxBs);
    }
    return out;
  }
}
