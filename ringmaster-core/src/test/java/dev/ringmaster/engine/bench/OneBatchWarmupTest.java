package dev.ringmaster.engine.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Decode steps are timed only after warm-up steps of the same batch size: a model whose first
 * decode steps at each batch size are slow (as lazily compiled code or kernels are) must not show
 * that in the median of the batch listed first, nor of any other.
 */
class OneBatchWarmupTest {
  private static final int SLOW_STEPS = 20;
  private static final long SLOW_MS = 25;

  /** Sleeps in the first {@link #SLOW_STEPS} decode steps of each batch size. */
  private static final class SlowToWarm extends ForwardingLanguageModel {
    private final Map<Integer, Integer> decodeSteps = new HashMap<>();

    SlowToWarm(LanguageModel lm) {
      super(lm);
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      if (tokens.length == logitRows.length
          && decodeSteps.merge(tokens.length, 1, Integer::sum) <= SLOW_STEPS) {
        try {
          Thread.sleep(SLOW_MS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return super.forward(tokens, layout, caches, logitRows);
    }
  }

  @Test
  void theFirstBatchSizeIsTimedWarm() throws Exception {
    try (SlowToWarm m =
        new SlowToWarm(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m, List.of(1, 2), 3, 24, 7, new PrintStream(new ByteArrayOutputStream()));
      for (OneBatchBenchmark.Result r : rs) {
        assertThat(r.decodeMedianMs()).as("batch %d", r.batchSize()).isLessThan(SLOW_MS / 2.0);
      }
    }
  }
}
