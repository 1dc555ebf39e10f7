package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * A model's decode graphs: the main set (one graph per captured batch size) and the long-context
 * set. The long-context set holds the sizes that take the fused MLA launch, captured again without
 * it, for steps whose context is longer than the {@code mla-fused-max-context} kernel option; for
 * DeepSeek Sparse Attention every size, captured again with sparse attention, for steps whose
 * context is longer than {@code index_topk}. A step replays the long-context graph of its bucket
 * where its context is past that limit and such a graph exists, else the main one. Empty with
 * {@code --disable-cuda-graph}.
 */
final class DecodeGraphSets implements AutoCloseable {
  private final DecodeGraphs main; // null: no graphs
  private final DecodeGraphs longContext; // null: none

  private DecodeGraphSets(DecodeGraphs main, DecodeGraphs longContext) {
    this.main = main;
    this.longContext = longContext;
  }

  /** No graphs: every decode step runs eagerly. */
  static DecodeGraphSets none() {
    return new DecodeGraphSets(null, null);
  }

  /**
   * Captures {@code mainStep} for every size of {@code sizes} and {@code longContextStep} for
   * {@code longContextSizes} (a subset; may be empty), showing progress for the main set where
   * {@code report}.
   */
  static DecodeGraphSets capture(
      List<Integer> sizes,
      List<Integer> longContextSizes,
      CudaStream stream,
      IntConsumer mainStep,
      IntConsumer longContextStep,
      boolean report) {
    if (sizes.isEmpty()) {
      return none();
    }
    DecodeGraphs main = new DecodeGraphs(sizes, stream, mainStep, report);
    try {
      DecodeGraphs longContext =
          longContextSizes.isEmpty()
              ? null
              : new DecodeGraphs(longContextSizes, stream, longContextStep, false);
      return new DecodeGraphSets(main, longContext);
    } catch (RuntimeException e) {
      main.close();
      throw e;
    }
  }

  /** The smallest captured size holding {@code n} rows, or -1 when none does. */
  int bucketFor(int n) {
    return main == null ? -1 : main.bucketFor(n);
  }

  /** Whether a long-context set was captured. */
  boolean hasLongContext() {
    return longContext != null;
  }

  /** The captured batch sizes of the main set, ascending. */
  List<Integer> sizes() {
    return main == null ? List.of() : main.sizes();
  }

  /**
   * Replays the graph of captured size {@code bucket}: the long-context one where {@code pastLimit}
   * and it exists, else the main one.
   */
  void replay(int bucket, boolean pastLimit, CudaStream stream) {
    boolean useLong = pastLimit && longContext != null && longContext.holds(bucket);
    (useLong ? longContext : main).replay(bucket, stream);
  }

  /** Device memory each main capture took, by size. */
  Map<Integer, Long> bytesPerSize() {
    return main == null ? Map.of() : main.bytesPerSize();
  }

  /** Device memory all captures took. */
  long bytes() {
    long b = 0;
    for (DecodeGraphs g : new DecodeGraphs[] {main, longContext}) {
      if (g != null) {
        b += g.bytesPerSize().values().stream().mapToLong(Long::longValue).sum();
      }
    }
    return b;
  }

  @Override
  public void close() {
    Resources.closeAll(main, longContext);
  }
}
