package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KernelTuning;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU model on the DeepSeek FP8 block-scaled fixture ({@code
 * fixtures/quantized/deepseek_v3_fp8}: every decoder linear but the router in e4m3 with 128x128
 * scales, a dense layer whose intermediate size 144 ends inside a block in both dimensions, routed
 * and shared experts) against the CPU engine on the same checkpoint, teacher forced, the CPU's
 * latent cache rounded to bf16 as the GPU stores it ({@link CudaCausalLmGpuTest#cpuReference}).
 * Both dequantize the same codes times the same scales exactly in f32; what differs is f32
 * summation order, the bf16 cache (the reference rounds it too) and {@code kv_b_proj}, which the
 * GPU's MLA kernels read as bf16 (the dequantized values rounded): the same sources of error as the
 * bf16 fixture's, so the same bound, 2e-2 relative on the logits, and with f32 activations
 * everywhere every callable greedy token equal. With the GEMV only up to 4 tokens the prefill
 * dequantizes each FP8 linear to bf16 and runs cuBLAS on bf16 activations, where a near-tie may
 * flip: at least 16 callable tokens equal.
 */
@Tag("gpu")
class Fp8CudaCausalLmGpuTest {
  private static final int STEPS = 24;
  private static final double TOL = 2e-2;

  static Path quantizedFixture(String name) {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      Path f = p.resolve("fixtures/quantized").resolve(name);
      if (Files.isDirectory(f)) {
        return f;
      }
    }
    throw new IllegalStateException("fixtures/quantized/" + name + " not found above the cwd");
  }

  @Test
  void greedyTokensAndLogitsMatchTheCpuOnTheSameFp8Checkpoint() throws IOException {
    Path dir = quantizedFixture("deepseek_v3_fp8");
    int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
    CudaCausalLmGpuTest.Run cpu = CudaCausalLmGpuTest.cpuReference(dir, prompt, STEPS, null);
    CudaCausalLmGpuTest.Run plain;
    try (CausalLm lm = CausalLm.load(dir)) {
      plain = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS);
    }
    for (CudaModelOptions o :
        List.of(CudaCausalLmGpuTest.exact(), CudaCausalLmGpuTest.exact().withGemvMaxTokens(4))) {
      CudaCausalLmGpuTest.Run gpu;
      CudaCausalLmGpuTest.Run free;
      long weightBytes;
      try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
        gpu = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS, cpu.tokens());
        free = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS);
        weightBytes = lm.memoryPlan().weightBytes();
      }
      int[] eq = CudaCausalLmGpuTest.compare(gpu, cpu);
      double worst = 0;
      for (int s = 0; s < STEPS; s++) {
        worst = Math.max(worst, CudaCausalLmGpuTest.relDiff(gpu.logits()[s], cpu.logits()[s]));
      }
      System.out.printf(
          "deepseek_v3_fp8 (gemv up to %d tokens) vs CPU with bf16 cache: %d/%d callable greedy"
              + " tokens equal (teacher forced), free-running prefix %d/%d, worst relative logits"
              + " diff %.2e; vs plain CPU: free-running prefix %d/%d; %d weight bytes on the GPU%n",
          o.gemvMaxTokens(),
          eq[0],
          eq[1],
          CudaCausalLmGpuTest.prefix(free.tokens(), cpu.tokens()),
          STEPS,
          worst,
          CudaCausalLmGpuTest.prefix(free.tokens(), plain.tokens()),
          STEPS,
          weightBytes);
      assertThat(eq[1]).as("steps with a callable margin").isGreaterThanOrEqualTo(16);
      if (o.gemvMaxTokens() > prompt.length) {
        assertThat(eq[0]).as("greedy tokens equal to the CPU's").isEqualTo(eq[1]);
        assertThat(worst).as("relative logits difference").isLessThan(TOL);
      } else {
        assertThat(eq[0]).as("greedy tokens equal to the CPU's").isGreaterThanOrEqualTo(16);
      }
    }
  }

  /**
   * The bit-identical FP8 variants, shared experts inside the routed experts' launches ({@code
   * moe-shared-fused}) and weights before the launch wait ({@code quant-weights-first}), change no
   * bit of a greedy run (decode steps, graphs included) against them off, also with the GEMV
   * stopping at 4 tokens. ({@code fp8-mma-swiglu} is off too, but the fixture's one-block K never
   * splits, so {@code Fp8SharedInExpertsGpuTest} covers it.)
   */
  @Test
  void bitIdenticalFp8VariantsChangeNoBitOfTheLogits() throws IOException {
    Path dir = quantizedFixture("deepseek_v3_fp8");
    int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
    KernelTuning on = KernelTuning.defaults();
    assertThat(on.moeSharedFused() && on.quantWeightsFirst() && on.fp8MmaSwiglu())
        .as("defaults")
        .isTrue();
    KernelTuning off =
        on.with("moe-shared-fused", false)
            .with("quant-weights-first", false)
            .with("fp8-mma-swiglu", false);
    for (CudaModelOptions o :
        List.of(CudaCausalLmGpuTest.exact(), CudaCausalLmGpuTest.exact().withGemvMaxTokens(4))) {
      CudaCausalLmGpuTest.Run[] runs = new CudaCausalLmGpuTest.Run[2];
      KernelTuning[] tunings = {off, on};
      for (int i = 0; i < 2; i++) {
        try (CudaCausalLm lm = CudaCausalLm.load(dir, o.withTuning(tunings[i]))) {
          runs[i] = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS);
        }
      }
      String what = "gemv up to " + o.gemvMaxTokens() + " tokens";
      assertThat(runs[1].tokens()).as(what).isEqualTo(runs[0].tokens());
      for (int s = 0; s < STEPS; s++) {
        float[] a = runs[0].logits()[s];
        float[] b = runs[1].logits()[s];
        int[] ab = new int[a.length];
        int[] bb = new int[b.length];
        for (int j = 0; j < a.length; j++) {
          ab[j] = Float.floatToRawIntBits(a[j]);
          bb[j] = Float.floatToRawIntBits(b[j]);
        }
        assertThat(bb).as(what + ", step " + s + " logits, variants on against off").isEqualTo(ab);
      }
    }
  }
}
