package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The tensor/expert-parallel GPU model against the single-GPU model on the golden fixtures: one
 * rank through the parallel code path with NCCL (a one-rank NCCL allreduce and allgather, and with
 * all-to-all expert dispatch NCCL send/recv groups, inside every captured decode graph) must
 * compute exactly what the single-GPU model does; two ranks (on two GPUs, or sharing one GPU
 * through the peer-memory kernels and copies) must give the same greedy tokens and logits within
 * the bf16 tolerance of {@link CudaCausalLmGpuTest}.
 */
@Tag("gpu")
class TensorParallelCudaLmGpuTest {
  private static final int STEPS = 24;

  /** Free-running greedy tokens that must agree with the single-GPU model. */
  private static final int MIN_EQUAL_STEPS = 16;

  /** Relative logits tolerance of the other GPU model tests (bf16 weights and cache). */
  private static final double BF16_TOL = 2e-2;

  /** Steps whose single-GPU top-2 margin is below this are not called (bf16 noise). */
  private static final double MIN_MARGIN = 0.05;

  private static final List<String> FIXTURES =
      List.of("deepseek_v3_bf16", "deepseek_v2_qlora_yarn_group", "deepseek_v3_yarn_nolora");

  /** The single-GPU model's free-running and teacher-forced-by-itself runs. */
  private record Reference(CudaCausalLmGpuTest.Run run, float[][] batchLogits) {}

  private static Reference single(Path dir, int[] prompt, CudaModelOptions o) {
    try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
      return new Reference(CudaCausalLmGpuTest.greedy(lm, prompt, STEPS), batch(lm, prompt));
    }
  }

  /**
   * Four sequences of different lengths prefilled in one step, then 6 greedy decode steps of the
   * batch (a captured size of 4); the logits of every step, rows concatenated.
   */
  private static float[][] batch(LanguageModel lm, int[] prompt) {
    int seqs = 4;
    int vocab = lm.config().vocabSize();
    List<KvCache> caches = new ArrayList<>();
    try {
      int[] starts = new int[seqs + 1];
      List<Integer> ids = new ArrayList<>();
      List<Integer> pos = new ArrayList<>();
      for (int s = 0; s < seqs; s++) {
        caches.add(lm.newCache());
        int len = Math.max(1, prompt.length - 2 * s);
        for (int i = 0; i < len; i++) {
          ids.add(prompt[(i + s) % prompt.length]);
          pos.add(i);
        }
        starts[s + 1] = starts[s] + len;
      }
      int[] rows = new int[seqs];
      for (int s = 0; s < seqs; s++) {
        rows[s] = starts[s + 1] - 1;
      }
      KvCache[] cs = caches.toArray(KvCache[]::new);
      int[] tokens = ids.stream().mapToInt(Integer::intValue).toArray();
      float[] l =
          lm.forward(
              tokens,
              new BatchLayout(starts, pos.stream().mapToInt(Integer::intValue).toArray()),
              cs,
              rows);
      float[][] out = new float[7][];
      out[0] = l;
      int[] one = {0, 1, 2, 3, 4};
      for (int step = 1; step < out.length; step++) {
        int[] next = new int[seqs];
        int[] p = new int[seqs];
        for (int s = 0; s < seqs; s++) {
          next[s] = CudaCausalLmGpuTest.argmax(l, s * vocab, vocab);
          p[s] = cs[s].length();
        }
        l = lm.forward(next, new BatchLayout(one, p), cs, new int[] {0, 1, 2, 3});
        out[step] = l;
      }
      return out;
    } finally {
      caches.forEach(KvCache::close);
    }
  }

  /** Checks {@code lm} against the single-GPU reference on {@code dir}; returns a report line. */
  private static String compare(
      String what, LanguageModel lm, Path dir, int[] prompt, Reference ref, boolean exact) {
    CudaCausalLmGpuTest.Run free = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS);
    CudaCausalLmGpuTest.Run forced =
        CudaCausalLmGpuTest.greedy(lm, prompt, STEPS, ref.run().tokens());
    double worst = 0;
    int called = 0;
    for (int s = 0; s < STEPS; s++) {
      double d = CudaCausalLmGpuTest.relDiff(forced.logits()[s], ref.run().logits()[s]);
      worst = Math.max(worst, d);
      if (CudaCausalLmGpuTest.margin(ref.run().logits()[s]) >= MIN_MARGIN) {
        called++;
        assertThat(forced.tokens()[s]).as(what + " step " + s).isEqualTo(ref.run().tokens()[s]);
      }
    }
    float[][] b = batch(lm, prompt);
    double worstBatch = 0;
    for (int s = 0; s < b.length; s++) {
      worstBatch = Math.max(worstBatch, CudaCausalLmGpuTest.relDiff(b[s], ref.batchLogits()[s]));
    }
    int prefix = CudaCausalLmGpuTest.prefix(free.tokens(), ref.run().tokens());
    String line =
        String.format(
            Locale.ROOT,
            "%s on %s: free-running prefix %d/%d, forced tokens equal on %d called steps,"
                + " logits rel diff %.3g (batch of 4: %.3g)",
            what,
            dir.getFileName(),
            prefix,
            STEPS,
            called,
            worst,
            worstBatch);
    System.out.println(line);
    assertThat(prefix).as(line).isGreaterThanOrEqualTo(MIN_EQUAL_STEPS);
    if (exact) {
      assertThat(worst).as(line).isZero();
      assertThat(worstBatch).as(line).isZero();
      assertThat(free.tokens()).as(line).containsExactly(ref.run().tokens());
    } else {
      assertThat(worst).as(line).isLessThanOrEqualTo(BF16_TOL);
      assertThat(worstBatch).as(line).isLessThanOrEqualTo(BF16_TOL);
    }
    return line;
  }

  /** One decode step of one sequence; returns the collectives rank 0 issued in it. */
  private static Map<String, Long> decodeStepCollectives(TensorParallelCudaLm lm, int[] prompt) {
    try (KvCache cache = lm.newCache()) {
      lm.forward(
          prompt,
          BatchLayout.single(prompt.length, 0),
          new KvCache[] {cache},
          new int[] {prompt.length - 1});
      return lm.collectivesDuring(
          () ->
              lm.forwardGreedy(
                  new int[] {prompt[0]},
                  BatchLayout.single(1, prompt.length),
                  new KvCache[] {cache},
                  new int[] {0}));
    }
  }

  @Test
  void oneRankThroughTheParallelPathWithNcclEqualsTheSingleGpuModelInsideGraphs()
      throws IOException {
    DeviceWorld.Options nccl =
        DeviceWorld.Options.of(1).with(AllReduceAlgorithm.NCCL, /* disableCustom */ true);
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
      CudaModelOptions o = CudaCausalLmGpuTest.exact();
      Reference ref = single(dir, prompt, o);
      try (TensorParallelCudaLm lm =
          TensorParallelCudaLm.load(dir, o, ParallelConfig.single(), nccl)) {
        long replays = lm.rank(0).collectives().replays();
        compare("tp=1 nccl", lm, dir, prompt, ref, true);
        assertThat(lm.rank(0).collectives().replays())
            .as("decode steps replayed captured graphs")
            .isGreaterThan(replays + STEPS);
        Map<String, Long> step = decodeStepCollectives(lm, prompt);
        int h = lm.config().hiddenSize();
        int layers = lm.config().numLayers();
        int vocab = lm.config().vocabSize();
        // Embedding, then after attention and after the MLP of every layer; one LM-head gather.
        assertThat(step)
            .as("collectives of one captured decode step")
            .containsExactly(
                Map.entry("ALL_REDUCE " + 4L * h + " B", 1L + 2L * layers),
                Map.entry("ALL_GATHER " + 4L * vocab + " B", 1L));
      }
      // The same path without graphs computes the same (eager NCCL).
      try (TensorParallelCudaLm lm =
          TensorParallelCudaLm.load(dir, eager(o), ParallelConfig.single(), nccl)) {
        compare("tp=1 nccl eager", lm, dir, prompt, ref, true);
      }
    }
  }

  /** {@code o} without CUDA graphs: every decode step eager. */
  private static CudaModelOptions eager(CudaModelOptions o) {
    return new CudaModelOptions(
        o.device(),
        o.memFractionStatic(),
        null,
        null,
        true,
        o.chunkedPrefillSize(),
        o.maxTotalTokens(),
        o.blockSize(),
        o.gemvMaxTokens(),
        o.moeGroupedMinTokens(),
        o.tuning(),
        o.profile());
  }

  /**
   * The collectives of one decode step of {@code bs} rows with all-to-all expert dispatch over
   * {@code ranks} ranks, as rank 0 reports them: the embedding allreduce, one after every attention
   * and every dense MLP; per MoE layer the dispatch (a row of hidden + 2 topK floats per slice
   * token and peer) and the combine (topK rows of hidden per slice token and peer) all-to-alls and
   * the allgather of the slices; the LM head's allgather.
   */
  private static Map<String, Long> allToAllStep(ModelConfig cfg, int ranks, int bs) {
    int h = cfg.hiddenSize();
    int k = cfg.moe().topK();
    long moe = cfg.moeLayers().stream().filter(b -> b).count();
    long dense = cfg.numLayers() - moe;
    long per = (bs + ranks - 1) / ranks;
    Map<String, Long> want = new java.util.HashMap<>();
    want.merge("ALL_REDUCE " + 4L * bs * h + " B", 1 + cfg.numLayers() + dense, Long::sum);
    want.merge("ALL_TO_ALL " + 4L * ranks * per * (h + 2 * k) + " B", moe, Long::sum);
    want.merge("ALL_TO_ALL " + 4L * ranks * per * k * h + " B", moe, Long::sum);
    want.merge("ALL_GATHER " + 4L * ranks * per * h + " B", moe, Long::sum);
    want.merge("ALL_GATHER " + 4L * bs * cfg.vocabSize() + " B", 1L, Long::sum);
    return want;
  }

  /**
   * All-to-all expert dispatch with one rank through NCCL (a one-rank NCCL send/recv group for the
   * dispatch and the combine, and an allgather, inside every captured decode graph) computes
   * exactly what the single-GPU model does, with graphs and eagerly.
   */
  @Test
  void oneRankWithAllToAllThroughNcclEqualsTheSingleGpuModel() throws IOException {
    DeviceWorld.Options nccl =
        DeviceWorld.Options.of(1).with(AllReduceAlgorithm.NCCL, /* disableCustom */ true);
    ParallelConfig a2a = new ParallelConfig(1, 1, ParallelConfig.MoeA2aBackend.ALL_TO_ALL);
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
      CudaModelOptions o = CudaCausalLmGpuTest.exact();
      Reference ref = single(dir, prompt, o);
      try (TensorParallelCudaLm lm = TensorParallelCudaLm.load(dir, o, a2a, nccl)) {
        long replays = lm.rank(0).collectives().replays();
        compare("tp=1 all-to-all nccl", lm, dir, prompt, ref, true);
        assertThat(lm.rank(0).collectives().replays())
            .as("decode steps replayed captured graphs")
            .isGreaterThan(replays + STEPS);
        assertThat(decodeStepCollectives(lm, prompt))
            .as("collectives of one captured decode step")
            .containsExactlyInAnyOrderEntriesOf(allToAllStep(lm.config(), 1, 1));
      }
      try (TensorParallelCudaLm lm = TensorParallelCudaLm.load(dir, eager(o), a2a, nccl)) {
        compare("tp=1 all-to-all nccl eager", lm, dir, prompt, ref, true);
      }
    }
  }

  /**
   * TP 2 / EP 2 with all-to-all dispatch, two ranks sharing GPU 0 (the test communicator copies the
   * blocks between the ranks' buffers): the single-GPU model's tokens, with the decode steps in
   * CUDA graphs and eagerly.
   */
  @Test
  void twoRanksSharingOneGpuWithAllToAllMatchTheSingleGpuModel() throws IOException {
    ParallelConfig a2a = new ParallelConfig(2, 2, ParallelConfig.MoeA2aBackend.ALL_TO_ALL);
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
      CudaModelOptions o = CudaCausalLmGpuTest.exact();
      Reference ref = single(dir, prompt, o);
      for (boolean graphs : new boolean[] {true, false}) {
        for (AllReduceAlgorithm a : List.of(AllReduceAlgorithm.FUSED, AllReduceAlgorithm.TWOSHOT)) {
          try (SameGpuRanks ranks = new SameGpuRanks(2, a);
              TensorParallelCudaLm lm =
                  TensorParallelCudaLm.onRanks(
                      dir, graphs ? o : eager(o), a2a, ranks.threads, ranks.comms, null)) {
            long replays = lm.rank(0).collectives().replays();
            String what = "tp=2 ep=2 all-to-all " + a + (graphs ? "" : " eager") + " on one GPU";
            compare(what, lm, dir, prompt, ref, false);
            if (graphs) {
              assertThat(lm.rank(0).collectives().replays())
                  .as(what + ": decode steps replayed captured graphs")
                  .isGreaterThan(replays + STEPS);
            }
            assertThat(decodeStepCollectives(lm, prompt))
                .as(what + ": collectives of one decode step")
                .containsExactlyInAnyOrderEntriesOf(allToAllStep(lm.config(), 2, 1));
          }
        }
      }
    }
  }

  @Test
  void twoRanksSharingOneGpuMatchTheSingleGpuModel() throws IOException {
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
      CudaModelOptions o = CudaCausalLmGpuTest.exact();
      Reference ref = single(dir, prompt, o);
      for (ParallelConfig p :
          List.of(
              ParallelConfig.tensor(2),
              new ParallelConfig(2, 2, ParallelConfig.MoeA2aBackend.NONE))) {
        for (AllReduceAlgorithm a : List.of(AllReduceAlgorithm.FUSED, AllReduceAlgorithm.TWOSHOT)) {
          try (SameGpuRanks ranks = new SameGpuRanks(2, a);
              TensorParallelCudaLm lm =
                  TensorParallelCudaLm.onRanks(dir, o, p, ranks.threads, ranks.comms, null)) {
            compare("tp=2 ep=" + p.epSize() + " " + a + " on one GPU", lm, dir, prompt, ref, false);
          }
        }
      }
    }
  }

  /**
   * Every world size of 2, 4 and 8 that the visible GPUs allow (the fixtures' heads, experts and
   * widths divide by 8), each parallel layout under each allreduce choice.
   */
  @Test
  void twoOrMoreGpusMatchTheSingleGpuModel() throws IOException {
    CudaDriver d = CudaDriver.get();
    d.init();
    int visible = d.deviceCount();
    assumeTrue(visible >= 2, "needs two GPUs, " + visible + " visible");
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
      CudaModelOptions o = CudaCausalLmGpuTest.exact();
      Reference ref = single(dir, prompt, o);
      for (int n = 2; n <= Math.min(8, visible); n *= 2) {
        for (ParallelConfig p :
            List.of(
                ParallelConfig.tensor(n),
                new ParallelConfig(n, n, ParallelConfig.MoeA2aBackend.NONE),
                new ParallelConfig(n, n, ParallelConfig.MoeA2aBackend.ALL_TO_ALL))) {
          for (DeviceWorld.Options w :
              List.of(
                  DeviceWorld.Options.of(n).with(AllReduceAlgorithm.NCCL, true),
                  DeviceWorld.Options.of(n).with(AllReduceAlgorithm.AUTO, false),
                  DeviceWorld.Options.of(n).with(AllReduceAlgorithm.FUSED, false))) {
            try (TensorParallelCudaLm lm = TensorParallelCudaLm.load(dir, o, p, w)) {
              compare(
                  "tp="
                      + n
                      + " ep="
                      + p.epSize()
                      + " "
                      + p.a2a()
                      + " "
                      + w.algorithm()
                      + " on "
                      + n
                      + " GPUs",
                  lm,
                  dir,
                  prompt,
                  ref,
                  false);
            }
          }
        }
      }
    }
  }
}
