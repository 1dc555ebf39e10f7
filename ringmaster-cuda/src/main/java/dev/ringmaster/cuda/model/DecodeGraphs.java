package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.util.Progress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntConsumer;

/**
 * Decode steps captured as CUDA graphs, one per batch size; a batch runs in the smallest captured
 * size that holds it (padding rows compute on the padding block). Each size is run once before its
 * capture (so cuBLAS and the module are warm) and the device memory its capture takes is measured.
 */
final class DecodeGraphs implements AutoCloseable {
  private final TreeMap<Integer, CudaGraph> graphs = new TreeMap<>();
  private final Map<Integer, Long> bytes = new LinkedHashMap<>();

  /** The captured batch sizes, ascending. */
  List<Integer> sizes() {
    return List.copyOf(graphs.keySet());
  }

  /**
   * Captures {@code step} (which launches one decode step of the given size) for every size,
   * showing progress where {@code report}.
   */
  DecodeGraphs(List<Integer> sizes, CudaStream stream, IntConsumer step, boolean report) {
    try (Progress p = Progress.startIf(report, "capturing cuda graphs", sizes.size(), "graphs")) {
      // Largest first: its allocations (cuBLAS, graph pools) are likely reused by the smaller ones.
      for (int i = sizes.size() - 1; i >= 0; i--) {
        int bs = sizes.get(i);
        step.accept(bs);
        stream.synchronize();
        long before = CudaDriverAccess.memoryInfo()[0];
        CudaGraph g = stream.capture(() -> step.accept(bs));
        graphs.put(bs, g);
        // Replay once so lazily allocated graph resources are counted too.
        g.launch(stream);
        stream.synchronize();
        bytes.put(bs, Math.max(0, before - CudaDriverAccess.memoryInfo()[0]));
        p.step(1);
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** The smallest captured size holding {@code n} rows, or -1 when none does. */
  int bucketFor(int n) {
    Integer k = graphs.ceilingKey(n);
    return k == null ? -1 : k;
  }

  /** Whether a graph of size {@code bs} was captured. */
  boolean holds(int bs) {
    return graphs.containsKey(bs);
  }

  /** Replays the graph of size {@code bs}. */
  void replay(int bs, CudaStream stream) {
    graphs.get(bs).launch(stream);
  }

  /** Device memory each capture took, by size. */
  Map<Integer, Long> bytesPerSize() {
    Map<Integer, Long> sorted = new TreeMap<>(bytes);
    return new LinkedHashMap<>(sorted);
  }

  @Override
  public void close() {
    graphs.values().forEach(CudaGraph::close);
    graphs.clear();
  }
}
