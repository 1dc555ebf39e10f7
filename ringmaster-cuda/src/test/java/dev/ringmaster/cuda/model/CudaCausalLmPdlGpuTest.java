package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU model with programmatic dependent launch ({@link CudaModelOptions#pdl()}) against the
 * same model without it, on the golden fixtures: every kernel waits for its predecessor before it
 * touches memory, so prefill, eager steps and the captured decode graphs must give the same tokens
 * and the same logits bit for bit. A kernel that read its input before the wait would race with the
 * kernel still writing it and show here as a different logit.
 */
@Tag("gpu")
class CudaCausalLmPdlGpuTest {
  private static final int STEPS = 24;

  private static final List<String> FIXTURES =
      List.of("deepseek_v3_bf16", "deepseek_v2_qlora_yarn_group", "deepseek_v2_sharded");

  private static CudaCausalLmGpuTest.Run greedy(Path dir, CudaModelOptions o) throws IOException {
    try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
      assertThat(lm.programmaticDependentLaunch()).as("pdl option applied").isEqualTo(o.pdl());
      return CudaCausalLmGpuTest.greedy(lm, CudaCausalLmGpuTest.promptOf(dir), STEPS);
    }
  }

  private static void assertSame(
      String what, CudaCausalLmGpuTest.Run on, CudaCausalLmGpuTest.Run off) {
    assertThat(on.tokens()).as(what + ": greedy tokens").containsExactly(off.tokens());
    for (int s = 0; s < STEPS; s++) {
      assertThat(on.logits()[s])
          .as(what + ": logits of step " + s)
          .containsExactly(off.logits()[s]);
    }
  }

  @Test
  void greedyDecodeFromGraphsWithPdlEqualsPdlOff() throws IOException {
    for (String name : FIXTURES) {
      Path dir = CudaCausalLmGpuTest.fixture(name);
      // Batch-1 decode steps replay the captured graph of size 1; step 0 is the prefill's logits.
      CudaCausalLmGpuTest.Run off = greedy(dir, CudaCausalLmGpuTest.exact().withPdl(false));
      CudaCausalLmGpuTest.Run on = greedy(dir, CudaCausalLmGpuTest.exact().withPdl(true));
      assertSame(name + " graphs", on, off);
      CudaCausalLmGpuTest.Run eager =
          greedy(dir, CudaCausalLmGpuTest.exact().withGraphs(List.of()).withPdl(true));
      assertSame(name + " eager", eager, off);
    }
  }

  @Test
  void batchedDecodeGraphsWithPdlEqualPdlOff() throws IOException {
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    int[] base = CudaCausalLmGpuTest.promptOf(dir);
    int[][] prompts = {base, Arrays.copyOf(base, 11), Arrays.copyOfRange(base, 2, 20), {7, 8}};
    float[][] off =
        CudaCausalLmGpuTest.decodeLogits(dir, CudaCausalLmGpuTest.exact().withPdl(false), prompts);
    float[][] on =
        CudaCausalLmGpuTest.decodeLogits(dir, CudaCausalLmGpuTest.exact().withPdl(true), prompts);
    for (int step = 0; step < off.length; step++) {
      assertThat(on[step]).as("decode step " + step + " of 4 sequences").containsExactly(off[step]);
    }
  }

  @Test
  void oneRankWithNcclInsideThePdlGraphsEqualsTheSingleGpuModel() throws IOException {
    // The decode graphs hold NCCL kernels (launched by NCCL, which never waits) between PDL
    // kernels; the kernel after each waits for NCCL's to complete.
    DeviceWorld.Options nccl =
        DeviceWorld.Options.of(1).with(AllReduceAlgorithm.NCCL, /* disableCustom */ true);
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
    CudaCausalLmGpuTest.Run off = greedy(dir, CudaCausalLmGpuTest.exact().withPdl(false));
    try (TensorParallelCudaLm lm =
        TensorParallelCudaLm.load(
            dir, CudaCausalLmGpuTest.exact().withPdl(true), ParallelConfig.single(), nccl)) {
      assertThat(lm.rank(0).programmaticDependentLaunch()).isTrue();
      assertSame("tp=1 nccl with PDL", CudaCausalLmGpuTest.greedy(lm, prompt, STEPS), off);
    }
  }
}
