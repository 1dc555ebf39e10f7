package dev.ringmaster.cuda.model;

import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.compare;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.cpuReference;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.exact;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.fixture;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.greedy;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.promptOf;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.relDiff;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.model.random.RandomModelWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Qwen3-MoE (grouped-query attention, per-head q/k norms, softmax top-k routing) on the GPU,
 * through the same architecture code as DeepSeek, against the CPU engine. The exact reference is a
 * bf16 model (random weights in the golden fixture's shape) on the CPU with its cache rounded to
 * bf16 as the GPU stores it; the f32 golden fixtures, which the GPU rounds to bf16, are checked to
 * stay the same model.
 */
@Tag("gpu")
class QwenCudaCausalLmGpuTest {
  /** Relative logits tolerance (max abs diff over max abs logit) of bf16 weights and cache. */
  private static final double BF16_TOL = 2e-2;

  @TempDir static Path tmp;

  private static Path bf16Model() throws IOException {
    Path out = tmp.resolve("qwen3_moe_bf16");
    if (!Files.isDirectory(out)) {
      RandomModelWriter.write(
          fixture("qwen3_moe_basic").resolve("config.json"), out, DType.BF16, 7);
    }
    return out;
  }

  @Test
  void matchesTheCpuWithABf16CacheOnBf16Weights() throws IOException {
    Path dir = bf16Model();
    int[] prompt = promptOf(fixture("qwen3_moe_basic"));
    int steps = 24;
    CudaCausalLmGpuTest.Run cpu = cpuReference(dir, prompt, steps, null);
    for (CudaModelOptions o : List.of(exact(), exact().withGemvMaxTokens(4))) {
      CudaCausalLmGpuTest.Run gpu;
      try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
        gpu = greedy(lm, prompt, steps, cpu.tokens());
      }
      int[] eq = compare(gpu, cpu);
      double[] diffs = new double[steps];
      for (int s = 0; s < steps; s++) {
        diffs[s] = relDiff(gpu.logits()[s], cpu.logits()[s]);
      }
      double worst = Arrays.stream(diffs).max().orElseThrow();
      double median = Arrays.stream(diffs).sorted().toArray()[steps / 2];
      System.out.printf(
          "qwen3_moe bf16 (gemv up to %d tokens) vs CPU with bf16 cache: %d/%d callable greedy"
              + " tokens equal (teacher forced), relative logits diff median %.2e, worst %.2e%n",
          o.gemvMaxTokens(), eq[0], eq[1], median, worst);
      assertThat(eq[1]).as("steps with a callable margin").isGreaterThanOrEqualTo(8);
      // A router near-tie may flip one token's experts between bf16 and f32 arithmetic.
      assertThat(eq[0]).as("greedy tokens equal to the CPU's").isGreaterThanOrEqualTo(eq[1] - 1);
      assertThat(median).as("median relative logits difference").isLessThan(BF16_TOL);
    }
  }

  @Test
  void theGoldenFixturesStayTheSameModelInBf16() throws IOException {
    for (String name : List.of("qwen3_moe_basic", "qwen3_moe_f16")) {
      Path dir = fixture(name);
      int[] prompt = promptOf(dir);
      float[] cpu;
      float[] gpu;
      try (CausalLm lm = CausalLm.load(dir);
          var c = lm.newCache()) {
        cpu = lm.forwardAll(prompt, c);
      }
      try (CudaCausalLm lm = CudaCausalLm.load(dir, exact());
          var c = lm.newCache()) {
        gpu = lm.forwardAll(prompt, c);
      }
      double d = relDiff(gpu, cpu);
      System.out.printf("%s (rounded to bf16 on the GPU): prefill logits %.2e%n", name, d);
      assertThat(d).as(name + " prefill logits").isLessThan(0.1);
    }
  }

  @Test
  void aHeadSizeTheKernelsCannotTakeIsRefusedBeforeLoading() {
    // qwen3_moe_untied has 12-dimensional heads; the GQA kernels take multiples of 8.
    assertThatThrownBy(() -> CudaCausalLm.load(fixture("qwen3_moe_untied"), exact()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("head dims that are multiples of 8")
        .hasMessageContaining("use --device cpu");
  }

  @Test
  void aBatchEqualsEachSequenceAlone() throws IOException {
    Path dir = bf16Model();
    int[] base = promptOf(fixture("qwen3_moe_basic"));
    int[][] prompts = {
      base, Arrays.copyOf(base, 17), Arrays.copyOfRange(base, 5, 14), Arrays.copyOf(base, 3)
    };
    int steps = 8;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact())) {
      int[][] alone = new int[prompts.length][];
      for (int s = 0; s < prompts.length; s++) {
        alone[s] = greedy(lm, prompts[s], steps).tokens();
      }
      int[][] batched = CudaCausalLmGpuTest.batchedGreedy(lm, prompts, steps);
      for (int s = 0; s < prompts.length; s++) {
        assertThat(batched[s]).as("sequence " + s).containsExactly(alone[s]);
      }
    }
  }

  @Test
  void graphReplaysEqualEagerSteps() throws IOException {
    Path dir = bf16Model();
    int[] base = promptOf(fixture("qwen3_moe_basic"));
    int[][] prompts = {base, Arrays.copyOf(base, 11), Arrays.copyOfRange(base, 2, 20), {7, 8}};
    float[][] withGraphs = CudaCausalLmGpuTest.decodeLogits(dir, exact(), prompts);
    float[][] eager = CudaCausalLmGpuTest.decodeLogits(dir, exact().withGraphs(List.of()), prompts);
    for (int step = 0; step < withGraphs.length; step++) {
      assertThat(withGraphs[step]).as("decode step " + step).containsExactly(eager[step]);
    }
  }
}
