package dev.ringmaster.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The per-step hook of {@link Generator}: what it sees, and teacher forcing. */
class GeneratorStepObserverTest {
  private static final int N = 8;
  private static CausalLm lm;
  private static GoldenFixture fixture;

  @BeforeAll
  static void load() {
    fixture = GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic"));
    lm = CausalLm.load(fixture.dir());
  }

  @AfterAll
  static void close() {
    lm.close();
  }

  private static SamplingParams greedy() {
    return new SamplingParams(0, 1, 0, 0, N, true, List.of());
  }

  /** Runs with an observer that records every step and forces {@code forced} when not null. */
  private static GenerationResult run(int[] forced, List<float[]> rows, List<Integer> sampled) {
    return new Generator(lm)
        .generate(
            fixture.promptIds(),
            greedy(),
            new int[] {1},
            t -> true,
            (step, logits, s) -> {
              assertThat(step).isEqualTo(rows.size());
              rows.add(logits.clone());
              sampled.add(s);
              return forced != null ? forced[step] : s;
            });
  }

  @Test
  void seesEveryStepAndChangesNothingWhenItKeepsTheSampledToken() {
    List<float[]> rows = new ArrayList<>();
    List<Integer> sampled = new ArrayList<>();
    int[] out = run(null, rows, sampled).outputIds();
    assertThat(out).containsExactly(Arrays.copyOf(fixture.greedyIds(), N));
    assertThat(rows).hasSize(N).allSatisfy(r -> assertThat(r).hasSize(lm.config().vocabSize()));
    assertThat(sampled).containsExactly(Arrays.stream(out).boxed().toArray(Integer[]::new));
    // Step 0 is the prefill's last position: transformers' logits there.
    float[] last = fixture.logits()[fixture.logits().length - 1];
    for (int v = 0; v < last.length; v++) {
      assertThat(rows.get(0)[v]).isCloseTo(last[v], org.assertj.core.data.Offset.offset(1e-3f));
    }
    for (int i = 0; i < N; i++) {
      assertThat(Sampler.argmax(rows.get(i), 0, last.length)).isEqualTo(out[i]);
    }
  }

  @Test
  void forcingTheFreeRunsTokensReproducesItsLogitsExactly() {
    List<float[]> free = new ArrayList<>();
    int[] out = run(null, free, new ArrayList<>()).outputIds();
    List<float[]> forced = new ArrayList<>();
    assertThat(run(out, forced, new ArrayList<>()).outputIds()).containsExactly(out);
    for (int i = 0; i < N; i++) {
      assertThat(forced.get(i)).as("step %d", i).containsExactly(free.get(i));
    }
  }

  @Test
  void forcedTokensAreTheOutputAndFeedTheNextSteps() {
    List<float[]> free = new ArrayList<>();
    int[] out = run(null, free, new ArrayList<>()).outputIds();
    int[] other = new int[N];
    for (int i = 0; i < N; i++) {
      other[i] = (out[i] + 7 + i) % lm.config().vocabSize();
    }
    List<float[]> rows = new ArrayList<>();
    List<Integer> sampled = new ArrayList<>();
    assertThat(run(other, rows, sampled).outputIds()).containsExactly(other);
    // The observer still gets what the model computed: step 0 never saw a forced token.
    assertThat(rows.get(0)).containsExactly(free.get(0));
    assertThat(sampled.get(0)).isEqualTo(out[0]);
    for (int i = 1; i < N; i++) {
      assertThat(rows.get(i)).as("step %d", i).isNotEqualTo(free.get(i));
    }
  }

  @Test
  void aForcedTokenOutsideTheVocabularyIsAnError() {
    int[] bad = new int[N];
    bad[2] = lm.config().vocabSize();
    assertThatThrownBy(() -> run(bad, new ArrayList<>(), new ArrayList<>()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("step 2 is outside the vocabulary");
  }
}
