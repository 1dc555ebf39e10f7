package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Typed launches of the tensor/expert-parallel model's kernels ({@code tensor_parallel.cu}):
 * vocab-parallel embedding, the LM-head logits gather, and the expert-parallel pair filter. Kept
 * apart from {@link RingmasterKernels} so that the single-GPU kernel set does not change. Load once
 * per context, use from the GPU's thread only.
 */
public final class ParallelKernels implements AutoCloseable {
  private final CudaDriver driver;
  private final long module;
  private final Kernel embeddingShard;
  private final Kernel vocabGather;
  private final Kernel moeLocalize;

  /** Loads the fatbin into the current context. */
  public ParallelKernels() {
    driver = CudaDriver.get();
    byte[] image = KernelImage.load();
    try (Arena a = Arena.ofConfined()) {
      MemorySegment seg = a.allocate(image.length, 16);
      seg.copyFrom(MemorySegment.ofArray(image));
      module = driver.moduleLoadData(seg);
    }
    embeddingShard = new Kernel(module, "rm_embedding_bf16_shard", 6);
    vocabGather = new Kernel(module, "rm_vocab_gather", 5);
    moeLocalize = new Kernel(module, "rm_moe_localize", 4);
  }

  /**
   * {@code out[t, :] = table[ids[t] - first, :]} for ids in {@code [first, first + rows)}, zeros
   * for the others (bf16 table of this rank's {@code rows} vocabulary rows, f32 out).
   */
  public void embeddingShard(
      CudaStream s, long out, long table, long ids, int n, int hidden, int first, int rows) {
    embeddingShard.arg(0, out).arg(1, table).arg(2, ids).arg(3, hidden).arg(4, first);
    embeddingShard.arg(5, rows).launch(s, n, 1, 1, 256, 0);
  }

  /**
   * Lays out allgathered logit slices {@code gathered [ranks, rows, share]} as {@code out [rows,
   * ranks * share]} (rank k's slice is vocabulary {@code [k * share, (k + 1) * share)}).
   */
  public void vocabGather(CudaStream s, long out, long gathered, int rows, int share, int ranks) {
    long total = (long) rows * share * ranks;
    int blocks = (int) Math.min((total + 255) / 256, 1 << 16);
    vocabGather.arg(0, out).arg(1, gathered).arg(2, rows).arg(3, share).arg(4, ranks);
    vocabGather.launch(s, blocks, 1, 1, 256, 0);
  }

  /**
   * Rewrites {@code pairs} routed expert ids (i32, in place) to this rank's local ids through
   * {@code localOf} (i32 per model expert, -1 where another rank owns it) and zeroes the per-pair
   * output rows {@code y [pairs, hidden]} of the pairs another rank computes.
   */
  public void moeLocalize(CudaStream s, long ids, long y, long localOf, int pairs, int hidden) {
    moeLocalize.arg(0, ids).arg(1, y).arg(2, localOf).arg(3, hidden);
    moeLocalize.launch(s, pairs, 1, 1, 256, 0);
  }

  @Override
  public void close() {
    driver.moduleUnload(module);
  }
}
