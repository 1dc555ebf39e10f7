package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How one prefill chunk's attention is split between the MLA paths: runs of at least {@link
 * #MIN_GEMM_TOKENS} consecutive tokens of one sequence go through the GEMM path ({@code
 * MlaPrefillAttention}, expanded where its scratch holds the context, else absorbed); the other
 * tokens (decode tokens mixed into the chunk, short runs) go through the split kernels, listed in a
 * device array. The tokens that need the absorbed query and output projections (the split tokens
 * and the absorbed runs) are kept as ranges of consecutive tokens, so that a chunk of expanded
 * prompt runs with a few decode rows projects only those rows. Host planning plus that one buffer,
 * reused for every chunk.
 */
final class PrefillSegments implements AutoCloseable {
  /**
   * Shortest run that pays for the GEMM path's extra launches (gather, conversion, two GEMMs and a
   * softmax per tile); shorter runs cost little in the split kernels.
   */
  static final int MIN_GEMM_TOKENS = 16;

  /**
   * A run of tokens {@code first .. first+count-1} of sequence {@code seq} at positions {@code
   * firstPos..}; {@code expanded}: in the expanded form (else absorbed).
   */
  record Run(int first, int count, int seq, int firstPos, boolean expanded) {}

  /** Tokens {@code first .. first+count-1} of the chunk. */
  record Range(int first, int count) {}

  /**
   * A chunk's plan: the GEMM runs, the split tokens (ascending) and the ranges of tokens that need
   * absorbed queries (ascending, neither touching nor overlapping).
   */
  record Plan(List<Run> gemmRuns, int[] splitTokens, List<Range> absorbedRanges) {}

  private final DeviceBuffer splitList;
  private Plan plan = new Plan(List.of(), new int[0], List.of());

  PrefillSegments(int maxTokens) {
    splitList = DeviceBuffer.allocate(4L * Math.max(maxTokens, 1));
  }

  /**
   * Plans a chunk of {@code n} tokens whose sequence and position per token are given; runs whose
   * context would exceed {@code maxGemmContext} stay on the split path, and runs whose context is
   * at most {@code expandedMaxContext} take the expanded form. Uploads the split list.
   */
  void plan(
      int n, int[] seq, int[] pos, int maxGemmContext, int expandedMaxContext, CudaStream stream) {
    plan = planOf(n, seq, pos, maxGemmContext, expandedMaxContext);
    if (!plan.gemmRuns().isEmpty() && plan.splitTokens().length > 0) {
      splitList.upload(stream, plan.splitTokens());
    }
  }

  /** The plan of a chunk, as {@link #plan} makes it (host only). */
  static Plan planOf(int n, int[] seq, int[] pos, int maxGemmContext, int expandedMaxContext) {
    List<Run> runs = new ArrayList<>();
    int[] split = new int[n];
    int splitCount = 0;
    RangeBuilder absorbed = new RangeBuilder();
    for (int i = 0; i < n; ) {
      int j = i + 1;
      while (j < n && seq[j] == seq[i] && pos[j] == pos[j - 1] + 1) {
        j++;
      }
      int context = pos[j - 1] + 1;
      if (j - i >= MIN_GEMM_TOKENS && context <= maxGemmContext) {
        boolean expanded = context <= expandedMaxContext;
        runs.add(new Run(i, j - i, seq[i], pos[i], expanded));
        if (!expanded) {
          absorbed.add(i, j);
        }
      } else {
        for (int t = i; t < j; t++) {
          split[splitCount++] = t;
        }
        absorbed.add(i, j);
      }
      i = j;
    }
    return new Plan(List.copyOf(runs), Arrays.copyOf(split, splitCount), absorbed.ranges());
  }

  /** Ranges added in ascending order, merged where one ends where the next begins. */
  private static final class RangeBuilder {
    private final List<Range> ranges = new ArrayList<>();
    private int first = -1;
    private int end = -1;

    void add(int from, int to) {
      if (from == end) {
        end = to;
        return;
      }
      flush();
      first = from;
      end = to;
    }

    private void flush() {
      if (first >= 0) {
        ranges.add(new Range(first, end - first));
      }
    }

    List<Range> ranges() {
      flush();
      first = -1;
      return List.copyOf(ranges);
    }
  }

  /** Runs for the GEMM path (empty: the whole chunk takes the split kernels). */
  List<Run> gemmRuns() {
    return plan.gemmRuns();
  }

  /** Tokens left to the split kernels. */
  int splitCount() {
    return plan.splitTokens().length;
  }

  /** Consecutive tokens that need the absorbed projections: split tokens and absorbed runs. */
  List<Range> absorbedRanges() {
    return plan.absorbedRanges();
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
