package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.ArrayList;
import java.util.List;

/**
 * Typed launches of the tensor/expert-parallel model's kernels ({@code tensor_parallel.cu}, {@code
 * moe_dispatch.cu}): vocab-parallel embedding, the LM-head logits gather, the expert-parallel pair
 * filter, and the pack / unpack / combine steps around the all-to-all expert dispatch. Kept apart
 * from {@link RingmasterKernels} so that the single-GPU kernel set does not change. Load once per
 * context, use from the GPU's thread only.
 */
public final class ParallelKernels implements AutoCloseable {
  private final CudaDriver driver;
  private final long module;
  private final Kernel embeddingShard;
  private final Kernel vocabGather;
  private final Kernel moeLocalize;
  private final Kernel a2aPack;
  private final Kernel a2aUnpack;
  private final Kernel a2aCombine;
  private final List<Kernel> all = new ArrayList<>();

  /** Loads the fatbin into the current context. */
  public ParallelKernels() {
    driver = CudaDriver.get();
    module = KernelImage.loadModule(driver);
    embeddingShard = kernel("rm_embedding_bf16_shard", 6);
    vocabGather = kernel("rm_vocab_gather", 5);
    moeLocalize = kernel("rm_moe_localize", 4);
    a2aPack = kernel("rm_a2a_pack", 10);
    a2aUnpack = kernel("rm_a2a_unpack", 8);
    a2aCombine = kernel("rm_a2a_combine", 10);
  }

  private Kernel kernel(String name, int arity) {
    Kernel k = new Kernel(module, name, arity);
    all.add(k);
    return k;
  }

  /** Programmatic dependent launch for these kernels, as {@link RingmasterKernels} has it. */
  public void setProgrammaticDependentLaunch(boolean on) {
    all.forEach(k -> k.programmaticDependentLaunch(on));
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

  /**
   * All-to-all dispatch, sender side: fills {@code send} ({@link A2aLayout#dispatchFloatsPerPeer()}
   * floats per peer, peers in rank order) with one row per token of {@code layout}'s slice for
   * every peer: the token's routed experts that the peer owns (ids -1 elsewhere), their weights,
   * and the token's row of {@code x} when there is at least one. {@code ids}/{@code weights}: the
   * routing {@code [tokens, topK]} of the whole step (global expert ids, i32 / f32); {@code owner}:
   * i32 rank of each expert.
   */
  public void a2aPack(
      CudaStream s, A2aLayout layout, long send, long x, long ids, long weights, long owner) {
    a2aPack.arg(0, send).arg(1, x).arg(2, ids).arg(3, weights).arg(4, owner);
    a2aPack.arg(5, layout.first()).arg(6, layout.mine()).arg(7, layout.perRank());
    a2aPack.arg(8, layout.hidden()).arg(9, layout.topK());
    a2aPack.launch(s, layout.perRank(), layout.ranks(), 1, 128, 0);
  }

  /**
   * All-to-all dispatch, owner side: the {@link A2aLayout#receivedRows()} rows of {@code recv} to
   * the expert kernels' inputs {@code x [rows, hidden]} (f32; rows without a routed slot left
   * unwritten), {@code ids [rows, topK]} (i32 local expert index through {@code localOf}, which has
   * one entry per model expert, -1 for empty slots) and {@code weights [rows, topK]} (f32, 0 for
   * empty slots).
   */
  public void a2aUnpack(
      CudaStream s,
      A2aLayout layout,
      long x,
      long ids,
      long weights,
      long recv,
      long localOf,
      int numExperts) {
    a2aUnpack.arg(0, x).arg(1, ids).arg(2, weights).arg(3, recv).arg(4, localOf);
    a2aUnpack.arg(5, numExperts).arg(6, layout.hidden()).arg(7, layout.topK());
    a2aUnpack.launch(s, layout.receivedRows(), 1, 1, 128, 0);
  }

  /**
   * All-to-all combine, sender side: {@code out [perRank, hidden]} gets, for each token of the
   * slice, {@code shared} (its shared-expert rows, may be {@code out} itself, or 0 for none) plus
   * its routed experts' weighted outputs in slot order, read from {@code back}, the pair rows
   * returned by the owners ({@link A2aLayout#combineFloatsPerPeer()} floats per owner, owners in
   * rank order); rows past the slice are zeroed.
   */
  public void a2aCombine(
      CudaStream s, A2aLayout layout, long out, long shared, long back, long ids, long owner) {
    a2aCombine.arg(0, out).arg(1, shared).arg(2, back).arg(3, ids).arg(4, owner);
    a2aCombine.arg(5, layout.first()).arg(6, layout.mine()).arg(7, layout.perRank());
    a2aCombine.arg(8, layout.hidden()).arg(9, layout.topK());
    a2aCombine.launch(s, layout.perRank(), 1, 1, 128, 4 * layout.topK());
  }

  @Override
  public void close() {
    driver.moduleUnload(module);
  }
}
