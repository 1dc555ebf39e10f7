package dev.ringmaster.cuda.model;

import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.argmax;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.compare;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.exact;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.fixture;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.greedy;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.margin;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.promptOf;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.relDiff;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.cuda.model.CudaCausalLmGpuTest.Run;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * FP8 indexer keys ({@code --indexer-cache-dtype fp8_e4m3}) on the GPU against the CPU engine with
 * FP8 keys, on the two DSA fixtures ({@code index_topk} 8, below and above the prompt lengths). The
 * reference is the CPU engine on the fixture's weights rounded to bf16 with its latent caches
 * rounded to bf16 after every token; its indexer keys and queries are quantized as the GPU's are
 * (the kernels write the CPU's bytes for the same input: {@code DsaFp8KernelsGpuTest}).
 *
 * <p>A key or query value whose f32 input lies at an e4m3 rounding midpoint takes a different code
 * for a change in its last bits, which moves that position's score by a few percent of one term:
 * where two scores at the top-k cut-off are that close, the two engines select differently and the
 * logits of that step part. So that the GPU's indexer inputs are the CPU's to f32 rounding, the
 * comparison runs MLA attention on CUDA cores in f32 ({@code mla-tensor-cores=false}, {@code
 * mla-prefill-gemm=false}: the tensor-core forms take bf16 queries, about 1e-3 off); the rare step
 * past the tolerance is reported and at most {@value #MAX_APART} of {@value #STEPS} may be. Every
 * other step: logits within 2e-2 (the bf16 tolerance of {@link CudaCausalLmGpuTest}), greedy tokens
 * equal under teacher forcing where the reference's top-2 margin is at least 0.05, and graph
 * replays equal to eager decode. With the default kernels, rows whose context fits in {@code
 * index_topk} attend to every position and give the bf16-key engine's logits bit for bit.
 */
@Tag("gpu")
class SparseAttentionFp8CudaCausalLmGpuTest {
  private static final int STEPS = 20;
  // Measured on an H200: 0, 1, 3 and 1 steps apart for the four cases (the shared-indexer fixture,
  // whose one selection serves several layers, parts most); the bound leaves one step of room.
  private static final int MAX_APART = 4;
  private static final double BF16_TOL = 2e-2;

  @TempDir Path tmp;

  private static KernelTuning fp8(KernelTuning t) {
    return t.with("indexer-cache-dtype", "fp8_e4m3");
  }

  /** {@link CudaCausalLmGpuTest#exact()} with FP8 keys and MLA attention in f32 on CUDA cores. */
  private static CudaModelOptions fp8F32Attention() {
    CudaModelOptions o = exact();
    return o.withTuning(
        fp8(o.tuning()).with("mla-tensor-cores", false).with("mla-prefill-gemm", false));
  }

  @ParameterizedTest
  @CsvSource({
    "deepseek_v32_dsa,32",
    "deepseek_v32_dsa,5",
    "glm_moe_dsa_shared,32",
    "glm_moe_dsa_shared,6"
  })
  void greedyTokensAndLogitsMatchTheCpuWithFp8Keys(String name, int promptLen) throws IOException {
    Path dir = fixture(name);
    Path rounded = Bf16Fixture.roundedCopy(dir, tmp.resolve(name));
    int[] prompt = Arrays.copyOf(promptOf(dir), promptLen);
    Run cpu = cpuReference(rounded, prompt, STEPS);
    Run gpu;
    Run eager;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, fp8F32Attention())) {
      var dsa = lm.config().sparseAttention();
      assertThat(dsa.fp8Keys()).isTrue();
      MemoryPlan plan = lm.memoryPlan();
      assertThat(plan.indexerDtype()).isEqualTo("fp8_e4m3");
      // Codes and one f32 scale per slot of every block, the padding block included.
      assertThat(plan.indexerBytes())
          .isEqualTo(
              dsa.indexedLayers()
                  * (plan.kvTokens() + plan.blockSize())
                  * (dsa.indexHeadDim() + 4L));
      int layers = lm.config().numLayers();
      int row = lm.config().kvLoraRank() + lm.config().qkRopeHeadDim();
      assertThat(lm.kvBytesPerToken())
          .isEqualTo(2L * layers * row + dsa.indexedLayers() * (dsa.indexHeadDim() + 4L));
      gpu = greedy(lm, prompt, STEPS, cpu.tokens());
    }
    try (CudaCausalLm lm = CudaCausalLm.load(dir, fp8F32Attention().withGraphs(List.of()))) {
      eager = greedy(lm, prompt, STEPS, cpu.tokens());
    }
    double worst = 0;
    int apart = 0;
    boolean[] far = new boolean[STEPS];
    StringBuilder perStep = new StringBuilder();
    for (int s = 0; s < STEPS; s++) {
      double d = relDiff(gpu.logits()[s], cpu.logits()[s]);
      far[s] = d >= BF16_TOL;
      perStep.append(String.format(" %d:%.1e%s", promptLen + s, d, far[s] ? "(apart)" : ""));
      if (far[s]) {
        apart++;
      } else {
        worst = Math.max(worst, d);
      }
    }
    int[] agree = compare(gpu, cpu);
    String what =
        String.format(
            "%s FP8 keys, prompt %d (index_topk 8): %d/%d callable greedy steps equal, worst logits"
                + " rel diff %.2e outside %d steps apart (by context length:%s); GPU %s vs CPU %s",
            name,
            promptLen,
            agree[0],
            agree[1],
            worst,
            apart,
            perStep,
            Arrays.toString(gpu.tokens()),
            Arrays.toString(cpu.tokens()));
    System.out.println(what);
    assertThat(apart).as("steps apart: " + what).isLessThanOrEqualTo(MAX_APART);
    for (int s = 0; s < STEPS; s++) {
      if (!far[s] && margin(cpu.logits()[s]) >= 0.05) {
        assertThat(gpu.tokens()[s]).as("step %d: %s", s, what).isEqualTo(cpu.tokens()[s]);
      }
    }
    for (int s = 0; s < STEPS; s++) {
      assertThat(eager.logits()[s])
          .as("%s prompt %d step %d: eager decode equals the graph replay", name, promptLen, s)
          .containsExactly(gpu.logits()[s]);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"deepseek_v32_dsa", "glm_moe_dsa_shared"})
  void rowsWithinIndexTopKDoNotDependOnTheKeyFormat(String name) throws IOException {
    Path dir = fixture(name);
    int[] prompt = promptOf(dir);
    float[] bf16;
    float[] fp8;
    int topK;
    int vocab;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact())) {
      topK = lm.config().sparseAttention().topK();
      vocab = lm.config().vocabSize();
      bf16 = lm.forwardAll(prompt, lm.newCache());
    }
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact().withTuning(fp8(exact().tuning())))) {
      fp8 = lm.forwardAll(prompt, lm.newCache());
      // Past index_topk the keys are scored: FP8 keys may select otherwise, but stay finite.
      for (float v : fp8) {
        assertThat(Float.isFinite(v)).isTrue();
      }
    }
    assertThat(prompt.length).isGreaterThan(topK);
    assertThat(Arrays.copyOf(fp8, topK * vocab))
        .as("%s: prefill rows whose context fits in index_topk", name)
        .containsExactly(Arrays.copyOf(bf16, topK * vocab));
  }

  /** The CPU engine with FP8 keys token by token, its latent caches rounded to bf16 after each. */
  private static Run cpuReference(Path dir, int[] prompt, int steps) {
    try (CausalLm lm = CausalLm.load(dir, fp8(KernelTuning.defaults()))) {
      int vocab = lm.config().vocabSize();
      KvCache cache = lm.newCache();
      float[] l = null;
      for (int i = 0; i < prompt.length; i++) {
        l = roundedStep(lm, prompt[i], i, cache);
      }
      int[] out = new int[steps];
      float[][] logits = new float[steps][];
      for (int s = 0; s < steps; s++) {
        logits[s] = l;
        out[s] = argmax(l, 0, vocab);
        l = roundedStep(lm, out[s], prompt.length + s, cache);
      }
      return new Run(out, logits);
    }
  }

  private static float[] roundedStep(CausalLm lm, int token, int pos, KvCache cache) {
    float[] l =
        lm.forward(
            new int[] {token}, BatchLayout.single(1, pos), new KvCache[] {cache}, new int[] {0});
    for (int layer = 0; layer < lm.config().numLayers(); layer++) {
      round(cache.a(layer));
      round(cache.b(layer));
    }
    return l;
  }

  private static void round(float[] a) {
    for (int i = 0; i < a.length; i++) {
      a[i] = Numerics.bf16ToFloat(Numerics.floatToBf16(a[i]));
    }
  }
}
