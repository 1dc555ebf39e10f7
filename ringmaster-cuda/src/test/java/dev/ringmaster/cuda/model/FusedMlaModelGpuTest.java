package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.model.random.RandomModelWriter;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch-1 decode through the fused MLA launch, end to end. The golden fixtures' latents are too
 * narrow for it (it takes DeepSeek's 512-dim latent), so this writes a random bf16 model with
 * DeepSeek-V2-Lite's attention shape (512 latent, 64 rotary, 128 no-rope and value dims, YaRN) and
 * small elsewhere (hidden 512, 4 heads, 2 dense layers: no routing near-ties), and compares the
 * GPU's logits with the CPU engine's (bf16 cache, teacher forced) for a short prompt, whose steps
 * replay the fused graph, and a prompt longer than the fused launch's context limit, whose steps
 * replay the graph captured without it. A verify pass (5 rows of one sequence beside a decode row
 * of another, in the 8-row graph captured with the fused launch: {@code mla-fused-tokens=8}) gives
 * the logits of one-token steps over the same tokens, through the fused launch ({@code
 * mla-fused-verify}, within 1e-3: the same attention, GEMV sums associated differently at one
 * token) and through the separate kernels (within 2e-2: bf16 probabilities on tensor cores).
 */
@Tag("gpu")
class FusedMlaModelGpuTest {
  private static final int STEPS = 8;

  @TempDir Path tmp;

  @Test
  void shortAndLongContextDecodeMatchTheCpu() throws IOException {
    Path dir = v2LiteAttentionModel(tmp);
    SplittableRandom r = new SplittableRandom(11);
    int longLen = dev.ringmaster.runtime.KernelTuning.defaults().mlaFusedMaxContext() + 76;
    for (int len : new int[] {30, longLen}) {
      int[] prompt = r.ints(len, 2, 512).toArray();
      CudaCausalLmGpuTest.Run cpu = CudaCausalLmGpuTest.cpuReference(dir, prompt, STEPS, null);
      CudaCausalLmGpuTest.Run gpu;
      try (CudaCausalLm lm = CudaCausalLm.load(dir, CudaCausalLmGpuTest.exact())) {
        assertThat(lm.capturedLongContextGraphs()).as("graphs without the fused launch").isTrue();
        gpu = CudaCausalLmGpuTest.greedy(lm, prompt, STEPS, cpu.tokens());
      }
      double worst = 0;
      for (int s = 0; s < STEPS; s++) {
        worst = Math.max(worst, CudaCausalLmGpuTest.relDiff(gpu.logits()[s], cpu.logits()[s]));
      }
      System.out.printf(
          "V2-Lite-attention random model, %d-token prompt: worst relative logits diff over %d"
              + " steps %.2e%n",
          len, STEPS, worst);
      assertThat(worst).as("relative logits difference, prompt of " + len).isLessThan(2e-2);
    }
  }

  @Test
  void verifyRowsThroughTheFusedLaunchMatchOneTokenSteps() throws IOException {
    Path dir = v2LiteAttentionModel(tmp);
    SplittableRandom r = new SplittableRandom(12);
    int[] prompt = r.ints(30, 2, 512).toArray();
    int[] drafts = r.ints(5, 2, 512).toArray();
    int[] other = r.ints(20, 2, 512).toArray();
    int otherNext = 7;
    int vocab = 512;
    KernelTuning fused8 = KernelTuning.defaults().with("mla-fused-tokens", 8);
    for (boolean fusedVerify : new boolean[] {true, false}) {
      CudaModelOptions o =
          CudaCausalLmGpuTest.exact().withTuning(fused8.with("mla-fused-verify", fusedVerify));
      try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
        // One-token steps: the prompt, then each draft alone; the other sequence's next token.
        float[][] want = new float[drafts.length + 1][];
        try (KvCache c = lm.newCache();
            KvCache d = lm.newCache()) {
          prefill(lm, prompt, c);
          for (int i = 0; i < drafts.length; i++) {
            want[i] =
                lm.forward(
                    new int[] {drafts[i]},
                    BatchLayout.single(1, prompt.length + i),
                    new KvCache[] {c},
                    new int[] {0});
          }
          prefill(lm, other, d);
          want[drafts.length] =
              lm.forward(
                  new int[] {otherNext},
                  BatchLayout.single(1, other.length),
                  new KvCache[] {d},
                  new int[] {0});
        }
        // The verify pass: the drafts as 5 rows of one sequence, the other sequence's token beside.
        float[] got;
        try (KvCache c = lm.newCache();
            KvCache d = lm.newCache()) {
          prefill(lm, prompt, c);
          prefill(lm, other, d);
          int[] tokens = new int[drafts.length + 1];
          int[] pos = new int[drafts.length + 1];
          for (int i = 0; i < drafts.length; i++) {
            tokens[i] = drafts[i];
            pos[i] = prompt.length + i;
          }
          tokens[drafts.length] = otherNext;
          pos[drafts.length] = other.length;
          int[] rows = java.util.stream.IntStream.range(0, tokens.length).toArray();
          got =
              lm.forward(
                  tokens,
                  new BatchLayout(new int[] {0, drafts.length, drafts.length + 1}, pos),
                  new KvCache[] {c, d},
                  rows);
        }
        double worst = 0;
        for (int i = 0; i <= drafts.length; i++) {
          float[] row = java.util.Arrays.copyOfRange(got, i * vocab, (i + 1) * vocab);
          worst = Math.max(worst, CudaCausalLmGpuTest.relDiff(row, want[i]));
        }
        System.out.printf(
            "verify rows (mla-fused-verify=%s) vs one-token steps: worst relative logits diff"
                + " %.2e%n",
            fusedVerify, worst);
        assertThat(worst)
            .as("verify rows vs one-token steps, mla-fused-verify=" + fusedVerify)
            .isLessThan(fusedVerify ? 1e-3 : 2e-2);
      }
    }
  }

  private static void prefill(CudaCausalLm lm, int[] prompt, KvCache cache) {
    lm.forward(
        prompt,
        BatchLayout.single(prompt.length, 0),
        new KvCache[] {cache},
        new int[] {prompt.length - 1});
  }

  /**
   * Writes a random bf16 model with DeepSeek-V2-Lite's attention shape (512 latent, 64 rotary, 128
   * no-rope and value dims, YaRN), small elsewhere (hidden 512, 4 heads, 2 dense layers, vocabulary
   * 512), into {@code tmp} and returns its directory.
   */
  static Path v2LiteAttentionModel(Path tmp) throws IOException {
    Path config = tmp.resolve("config.json");
    Files.writeString(
        config,
        """
        {
          "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
          "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 2,
          "first_k_dense_replace": 2, "moe_intermediate_size": 128, "n_routed_experts": 8,
          "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
          "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": false,
          "routed_scaling_factor": 1.0, "moe_layer_freq": 1,
          "num_attention_heads": 4, "num_key_value_heads": 4, "kv_lora_rank": 512,
          "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
          "max_position_embeddings": 4096, "rms_norm_eps": 1e-06, "rope_theta": 10000,
          "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
            "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096},
          "vocab_size": 512, "hidden_act": "silu", "initializer_range": 0.02,
          "tie_word_embeddings": false, "attention_bias": false, "bos_token_id": 0,
          "eos_token_id": 1, "torch_dtype": "bfloat16"
        }
        """);
    Path dir = tmp.resolve("model");
    RandomModelWriter.write(config, dir, DType.BF16, 7);
    return dir;
  }
}
