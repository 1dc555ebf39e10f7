package dev.ringmaster.model.arch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A sequence's logits are bitwise the same whether it runs alone on one thread or batched with
 * other sequences on several: the CPU's summation orders depend on neither the batch nor the
 * threads, in prefill (many tokens, attention split by token) and in decode (attention split by
 * head). A tolerance would hide a batch-dependent order; equality does not.
 */
class BatchInvarianceTest {
  private static final int DECODE_STEPS = 3;

  static List<GoldenFixture> fixtures() {
    return GoldenFixture.all();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void aSequenceAloneEqualsItInABatch(GoldenFixture f) {
    try (CausalLm oneThread =
            CausalLm.load(f.dir(), KernelTuning.defaults().with("cpu-threads", 1));
        CausalLm threeThreads =
            CausalLm.load(f.dir(), KernelTuning.defaults().with("cpu-threads", 3))) {
      int[] prompt = f.promptIds();
      float[][] alone = run(oneThread, new int[][] {prompt})[0];
      int[] other = new int[prompt.length + 5];
      for (int i = 0; i < other.length; i++) {
        other[i] = prompt[(i * 7 + 3) % prompt.length];
      }
      float[][][] batched =
          run(threeThreads, new int[][] {other, prompt, Arrays.copyOf(prompt, 2)});
      for (int step = 0; step <= DECODE_STEPS; step++) {
        assertThat(batched[1][step]).as("%s, step %d", f, step).isEqualTo(alone[step]);
      }
    }
  }

  /**
   * Prefills the prompts as one batch and decodes {@link #DECODE_STEPS} greedy steps of all of
   * them; returns each sequence's logits of its last prompt token and of every step.
   */
  private static float[][][] run(CausalLm model, int[][] prompts) {
    int n = prompts.length;
    int vocab = model.config().vocabSize();
    int[] starts = new int[n + 1];
    for (int s = 0; s < n; s++) {
      starts[s + 1] = starts[s] + prompts[s].length;
    }
    int[] tokens = new int[starts[n]];
    int[] positions = new int[starts[n]];
    int[] lastRows = new int[n];
    for (int s = 0; s < n; s++) {
      for (int i = 0; i < prompts[s].length; i++) {
        tokens[starts[s] + i] = prompts[s][i];
        positions[starts[s] + i] = i;
      }
      lastRows[s] = starts[s + 1] - 1;
    }
    KvCache[] caches = new KvCache[n];
    for (int s = 0; s < n; s++) {
      caches[s] = model.newCache();
    }
    float[][][] out = new float[n][DECODE_STEPS + 1][];
    float[] logits = model.forward(tokens, new BatchLayout(starts, positions), caches, lastRows);
    int[] stepStarts = new int[n + 1];
    int[] rows = new int[n];
    for (int s = 0; s < n; s++) {
      stepStarts[s + 1] = s + 1;
      rows[s] = s;
    }
    for (int step = 0; ; step++) {
      int[] next = new int[n];
      int[] pos = new int[n];
      for (int s = 0; s < n; s++) {
        out[s][step] = Arrays.copyOfRange(logits, s * vocab, (s + 1) * vocab);
        next[s] = argmax(out[s][step]);
        pos[s] = prompts[s].length + step;
      }
      if (step == DECODE_STEPS) {
        break;
      }
      logits = model.forward(next, new BatchLayout(stepStarts, pos), caches, rows);
    }
    for (KvCache c : caches) {
      c.close();
    }
    return out;
  }

  private static int argmax(float[] x) {
    int best = 0;
    for (int i = 1; i < x.length; i++) {
      if (x[i] > x[best]) {
        best = i;
      }
    }
    return best;
  }
}
