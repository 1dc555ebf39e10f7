package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * How one prefill chunk's attention is split between the two MLA paths: runs of at least {@link
 * #MIN_GEMM_TOKENS} consecutive tokens of one sequence go through the GEMM path ({@code
 * MlaPrefillAttention}); the other tokens (decode tokens mixed into the chunk, short runs) go
 * through the split kernels, listed in a device array. Host planning plus that one buffer, reused
 * for every chunk.
 */
final class PrefillSegments implements AutoCloseable {
  /**
   * Shortest run that pays for the GEMM path's extra launches (gather, conversion, two GEMMs and a
   * softmax per tile); shorter runs cost little in the split kernels.
   */
  static final int MIN_GEMM_TOKENS = 16;

  /**
   * A run of tokens {@code first .. first+count-1} of sequence {@code seq} at positions {@code
   * firstPos..}.
   */
  record Run(int first, int count, int seq, int firstPos) {}

  private final DeviceBuffer splitList;
  private final List<Run> gemmRuns = new ArrayList<>();
  private int splitCount;

  PrefillSegments(int maxTokens) {
    splitList = DeviceBuffer.allocate(4L * Math.max(maxTokens, 1));
  }

  /**
   * Plans a chunk of {@code n} tokens whose sequence and position per token are given; runs whose
   * context would exceed {@code maxGemmContext} stay on the split path. Uploads the split list.
   */
  void plan(int n, int[] seq, int[] pos, int maxGemmContext, CudaStream stream) {
    gemmRuns.clear();
    int[] split = new int[n];
    splitCount = 0;
    for (int i = 0; i < n; ) {
      int j = i + 1;
      while (j < n && seq[j] == seq[i] && pos[j] == pos[j - 1] + 1) {
        j++;
      }
      if (j - i >= MIN_GEMM_TOKENS && pos[j - 1] + 1 <= maxGemmContext) {
        gemmRuns.add(new Run(i, j - i, seq[i], pos[i]));
      } else {
        for (int t = i; t < j; t++) {
          split[splitCount++] = t;
        }
      }
      i = j;
    }
    if (!gemmRuns.isEmpty() && splitCount > 0) {
      splitList.upload(stream, java.util.Arrays.copyOf(split, splitCount));
    }
  }

  /** Runs for the GEMM path (empty: the whole chunk takes the split kernels). */
  List<Run> gemmRuns() {
    return gemmRuns;
  }

  /** Tokens left to the split kernels. */
  int splitCount() {
    return splitCount;
  }

  /** Device list of the split tokens' indices. */
  long splitListPtr() {
    return splitList.ptr();
  }

  long bytes() {
    return splitList.bytes();
  }

  @Override
  public void close() {
    splitList.close();
  }
}
