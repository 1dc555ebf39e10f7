package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.KernelTuning;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU model on the ModelOpt NVFP4 fixture ({@code fixtures/quantized/deepseek_v3_nvfp4},
 * written by {@code model quantize --to nvfp4} with attention and the dense layer excluded: the MoE
 * layer's routed experts and shared expert in NVFP4, everything else bf16) against the CPU engine
 * on the same checkpoint, teacher forced, the CPU's latent cache rounded to bf16 as the GPU stores
 * it. Both decode the same codes and scales exactly; what differs is f32 summation order, where the
 * group and global scales multiply, and the bf16 cache: the bf16 fixture's bound, 2e-2 relative on
 * the logits, and every callable greedy token equal with f32 activations everywhere. Three runs:
 * the GEMVs and CUDA-core experts at every decode step (tensor-core experts in the prefill, from 8
 * tokens); the GEMV only up to 4 tokens (the shared expert's prefill through the dequantized copy
 * and cuBLAS on bf16 activations); tensor-core experts at every step (activations rounded to bf16).
 * The last two may flip a near-tie: at least 16 callable tokens equal.
 */
@Tag("gpu")
class Nvfp4CudaCausalLmGpuTest {
  private static final int STEPS = 24;
  private static final double TOL = 2e-2;

  @Test
  void greedyTokensAndLogitsMatchTheCpuOnTheSameNvfp4Checkpoint() throws IOException {
    Path dir = Fp8CudaCausalLmGpuTest.quantizedFixture("deepseek_v3_nvfp4");
    int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
    CudaCausalLmGpuTest.Run cpu = CudaCausalLmGpuTest.cpuReference(dir, prompt, STEPS, null);
    CudaCausalLmGpuTest.Run plain;
    try (CausalLm lm = CausalLm.load(dir)) {
      plain = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS);
    }
    CudaModelOptions exact = CudaCausalLmGpuTest.exact();
    CudaModelOptions tensorCores =
        exact.withTuning(
            KernelTuning.defaults()
                .with("moe-mma-min-tokens", 1)
                .with("quant-moe-mma-min-tokens", 1));
    for (CudaModelOptions o : List.of(exact, exact.withGemvMaxTokens(4), tensorCores)) {
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
      boolean f32Activations = o == exact;
      System.out.printf(
          "deepseek_v3_nvfp4 (gemv up to %d tokens, tensor-core experts from %d tokens) vs CPU"
              + " with bf16 cache: %d/%d callable greedy tokens equal (teacher forced),"
              + " free-running prefix %d/%d, worst relative logits diff %.2e; vs plain CPU:"
              + " free-running prefix %d/%d; %d weight bytes on the GPU%n",
          o.gemvMaxTokens(),
          o.tuning().moeMmaMinTokens(),
          eq[0],
          eq[1],
          CudaCausalLmGpuTest.prefix(free.tokens(), cpu.tokens()),
          STEPS,
          worst,
          CudaCausalLmGpuTest.prefix(free.tokens(), plain.tokens()),
          STEPS,
          weightBytes);
      assertThat(eq[1]).as("steps with a callable margin").isGreaterThanOrEqualTo(16);
      if (f32Activations) {
        assertThat(eq[0]).as("greedy tokens equal to the CPU's").isEqualTo(eq[1]);
      } else {
        assertThat(eq[0]).as("greedy tokens equal to the CPU's").isGreaterThanOrEqualTo(16);
      }
      assertThat(worst).as("relative logits difference").isLessThan(TOL);
    }
  }
}
