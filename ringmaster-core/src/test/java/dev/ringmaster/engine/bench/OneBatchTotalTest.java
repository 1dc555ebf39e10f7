package dev.ringmaster.engine.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The "Total" figures of {@code bench one-batch}: the prefill plus the decode steps a served
 * request of {@code outputLen} tokens runs (one fewer than the benchmark times, since the prefill
 * samples the first token), and the throughputs over that latency.
 */
class OneBatchTotalTest {
  private static final int INPUT = 3;
  private static final int OUTPUT = 5;
  private static final long STEP_MS = 20;
  private static final long LAST_STEP_MS = 400;

  /**
   * Decode steps sleep {@link #STEP_MS}; the benchmark's last timed step (the one a served request
   * never runs) sleeps {@link #LAST_STEP_MS}, so a total that counted it would show.
   */
  private static final class TimedSteps extends ForwardingLanguageModel {
    TimedSteps(LanguageModel lm) {
      super(lm);
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      if (tokens.length == logitRows.length) {
        boolean last = layout.positions()[0] == INPUT + OUTPUT - 1;
        sleep(last ? LAST_STEP_MS : STEP_MS);
      }
      return super.forward(tokens, layout, caches, logitRows);
    }

    private static void sleep(long ms) {
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Test
  void totalIsThePrefillAndTheDecodeStepsOfAServedRequest() throws Exception {
    try (TimedSteps m =
        new TimedSteps(CausalLm.load(RepoPaths.require("fixtures/golden/deepseek_v3_bf16")))) {
      List<OneBatchBenchmark.Result> rs =
          OneBatchBenchmark.run(
              m,
              List.of(2),
              INPUT,
              OUTPUT,
              7,
              new OneBatchBenchmark.Warmup(1, 0),
              new PrintStream(new ByteArrayOutputStream()));
      OneBatchBenchmark.Result r = rs.getFirst();
      double decodeSteps = OUTPUT - 1;
      assertThat(r.totalLatencyMs())
          .as(
              "prefill plus %s steps of %d ms, without the %d ms last one",
              decodeSteps, STEP_MS, LAST_STEP_MS)
          .isGreaterThanOrEqualTo(r.prefillMs() + decodeSteps * STEP_MS)
          .isLessThan(r.prefillMs() + decodeSteps * STEP_MS + LAST_STEP_MS / 2.0);
      assertThat(r.totalOutputTokensPerS())
          .isCloseTo(2.0 * OUTPUT * 1000 / r.totalLatencyMs(), within(1e-9));
      assertThat(r.totalTokensPerS())
          .isCloseTo(2.0 * (INPUT + OUTPUT) * 1000 / r.totalLatencyMs(), within(1e-9));
    }
  }

  @Test
  void oneOutputTokenIsThePrefillAlone() {
    assertThat(OneBatchBenchmark.totalLatencyMs(22.5, new double[] {3})).isEqualTo(22.5);
    assertThat(OneBatchBenchmark.totalLatencyMs(22.5, new double[] {3, 4, 100})).isEqualTo(29.5);
  }
}
