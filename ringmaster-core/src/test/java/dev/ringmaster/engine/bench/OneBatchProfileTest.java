package dev.ringmaster.engine.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.runtime.StepProfileReporting;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each batch size's result carries the profiles the model took while that batch ran, and nothing
 * the model profiled while loading.
 */
class OneBatchProfileTest {
  /** A real model that "profiles" every forward call, named after its token count. */
  private static final class Profiled extends ForwardingLanguageModel
      implements StepProfileReporting {
    private final Map<String, Map<String, Double>> taken = new LinkedHashMap<>();
    private final Map<Integer, Integer> callsByTokens = new LinkedHashMap<>();
    private final List<String> verifyLabels = new java.util.ArrayList<>();
    private String verifyLabel;

    Profiled(LanguageModel lm) {
      super(lm);
      taken.put("load", Map.of("everything", 1.0)); // as a memory planner's profiled prefill
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      taken.putIfAbsent("step of " + tokens.length + " tokens", Map.of("ops", 0.5));
      if (verifyLabel != null) {
        taken.putIfAbsent("verify of " + tokens.length + " tokens, " + verifyLabel, Map.of());
      }
      callsByTokens.merge(tokens.length, 1, Integer::sum);
      return super.forward(tokens, layout, caches, logitRows);
    }

    @Override
    public void profileVerifyPasses(String label) {
      verifyLabel = label;
      verifyLabels.add(String.valueOf(label));
    }

    @Override
    public Map<String, Map<String, Double>> takeStepProfiles() {
      Map<String, Map<String, Double>> out = new LinkedHashMap<>(taken);
      taken.clear();
      return out;
    }
  }

  @Test
  void eachBatchSizeGetsTheProfilesTakenWhileItRan() throws Exception {
    try (Profiled m =
        new Profiled(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m, List.of(1, 2), 3, 2, 7, new PrintStream(new ByteArrayOutputStream()));
      assertThat(rs).hasSize(2);
      // batch 1: a 3-token prefill and a 1-token decode step; batch 2: 6 and 2 tokens
      assertThat(rs.get(0).profileMs()).containsOnlyKeys("step of 3 tokens", "step of 1 tokens");
      assertThat(rs.get(1).profileMs()).containsOnlyKeys("step of 6 tokens", "step of 2 tokens");
      assertThat(rs.get(1).profileMs().get("step of 2 tokens")).containsEntry("ops", 0.5);
    }
  }

  /** Verify passes are profiled over the repeating text only, and land in their batch's result. */
  @Test
  void verifyPassesAreProfiledOverTheRepeatingText() throws Exception {
    try (Profiled m =
        new Profiled(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m,
              List.of(1),
              3,
              2,
              7,
              new OneBatchBenchmark.Warmup(1, 1),
              List.of(2),
              new PrintStream(new ByteArrayOutputStream()));
      assertThat(m.verifyLabels).containsExactly("repeating text", "null");
      assertThat(rs.get(0).profileMs()).containsKey("verify of 3 tokens, repeating text");
    }
  }

  @Test
  void eachBatchSizeRunsItsWarmupPrefillsAndDecodeStepsFirst() throws Exception {
    try (Profiled m =
        new Profiled(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      OneBatchBenchmark.run(
          m,
          List.of(2),
          3,
          4,
          7,
          new OneBatchBenchmark.Warmup(3, 5),
          new PrintStream(new ByteArrayOutputStream()));
      // 3 warm-up rounds of a prefill of 2 x 3 tokens and 5 decode steps of 2 tokens, then the
      // timed prefill and 4 timed decode steps
      assertThat(m.callsByTokens).containsExactly(Map.entry(6, 4), Map.entry(2, 19));
    }
  }

  /**
   * A warm-up that waits for the JIT runs at least its rounds and at most {@link
   * OneBatchBenchmark.Warmup#MAX_ROUNDS}, and every result says how many it ran.
   */
  @Test
  void aWarmupUntilTheJitSettlesReportsItsRounds() throws Exception {
    try (Profiled m =
        new Profiled(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      ByteArrayOutputStream log = new ByteArrayOutputStream();
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m,
              List.of(1, 2),
              3,
              2,
              7,
              new OneBatchBenchmark.Warmup(5, 2, true),
              new PrintStream(log));
      for (OneBatchBenchmark.Result r : rs) {
        assertThat(r.warmupRounds()).isBetween(5, OneBatchBenchmark.Warmup.MAX_ROUNDS);
      }
      int prefillsOfOne = m.callsByTokens.get(3);
      assertThat(prefillsOfOne).isEqualTo(rs.get(0).warmupRounds() + 1);
      assertThat(log.toString())
          .contains("batch 1: " + rs.get(0).warmupRounds() + " warm-up rounds")
          .contains("at least 5, then until the JIT settles");
    }
  }

  @Test
  void warmupDecodeStepsBeyondTheContextRestartFromThePrompt() throws Exception {
    try (Profiled m =
        new Profiled(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      int context = m.config().maxPositionEmbeddings();
      int inputLen = context - 4; // room for 4 decode steps per prefill
      OneBatchBenchmark.run(
          m,
          List.of(1),
          inputLen,
          2,
          7,
          new OneBatchBenchmark.Warmup(1, 10),
          new PrintStream(new ByteArrayOutputStream()));
      // 10 warm-up steps in runs of 4 need 3 prefills; then the timed prefill and 2 steps
      assertThat(m.callsByTokens).containsExactly(Map.entry(inputLen, 4), Map.entry(1, 12));
    }
  }

  @Test
  void theWarmupNeedsAPrefillAndNoNegativeSteps() {
    assertThatThrownBy(() -> new OneBatchBenchmark.Warmup(0, 4))
        .hasMessageContaining("--warmup-rounds must be at least 1");
    assertThatThrownBy(() -> new OneBatchBenchmark.Warmup(1, -1))
        .hasMessageContaining("--warmup-decode-steps must not be negative");
  }
}
