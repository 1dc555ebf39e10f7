package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The engine's account of a request's time to first token: the listener hears once, before the
 * first token, when its first prompt step went to the model, when its first token came back and how
 * many steps the prefill took; and the first token is handed out as soon as it is on the host, not
 * after the decode step that follows it.
 */
class PrefillTimesTest {
  private static final long DECODE_MS = 300;
  private static CausalLm lm;

  @BeforeAll
  static void load() {
    lm =
        CausalLm.load(
            GoldenFixture.load(RepoPaths.require("fixtures/golden/deepseek_v3_basic")).dir());
  }

  @AfterAll
  static void close() {
    lm.close();
  }

  /** Decode steps (one token per sequence) sleep {@link #DECODE_MS}; prefill steps do not. */
  private static final class SlowDecode extends ForwardingLanguageModel {
    SlowDecode() {
      super(lm);
    }

    @Override
    public int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
      if (tokens.length == layout.numSeqs()) {
        try {
          Thread.sleep(DECODE_MS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return super.forwardGreedy(tokens, layout, caches, rows);
    }

    @Override
    public void close() {}
  }

  /** Records when each callback came. */
  private static final class Timed implements TokenListener {
    final List<PrefillTimes> prefills = new ArrayList<>();
    final List<Long> tokenNanos = new ArrayList<>();
    final CompletableFuture<RequestOutcome> done = new CompletableFuture<>();

    @Override
    public synchronized void onPrefilled(PrefillTimes times) {
      assertThat(tokenNanos).as("prefill times come before the first token").isEmpty();
      prefills.add(times);
    }

    @Override
    public synchronized boolean onToken(TokenEvent event) {
      tokenNanos.add(System.nanoTime());
      return true;
    }

    @Override
    public void onFinish(RequestOutcome outcome) {
      done.complete(outcome);
    }
  }

  @ParameterizedTest(name = "overlap {0}")
  @ValueSource(booleans = {true, false})
  void prefillTimesAndAFirstTokenThatDoesNotWaitForTheNextStep(boolean overlap) throws Exception {
    int prompt = 40;
    int chunk = 16; // three prefill steps: 16 + 16 + 8
    try (SlowDecode m = new SlowDecode();
        BatchEngine e =
            BatchEngine.start(m, new BatchConfig(4, 16, chunk, 16, 64).withOverlap(overlap))) {
      int[] ids = new int[prompt];
      for (int i = 0; i < prompt; i++) {
        ids[i] = 2 + i;
      }
      Timed t = new Timed();
      long submitted = System.nanoTime();
      SamplingParams three = new SamplingParams(0, 1, 0, 0, 3, true, List.of());
      e.submit(new EngineRequest(null, ids, three, new int[] {1}, -1, t));
      assertThat(t.done.get(60, TimeUnit.SECONDS).reason()).isEqualTo(FinishReason.LENGTH);
      assertThat(t.prefills).hasSize(1);
      PrefillTimes p = t.prefills.getFirst();
      assertThat(p.steps()).isEqualTo(3);
      assertThat(p.firstStepNanos()).isGreaterThanOrEqualTo(submitted);
      assertThat(p.tokenNanos()).isGreaterThan(p.firstStepNanos());
      long first = t.tokenNanos.getFirst();
      assertThat(first).isGreaterThanOrEqualTo(p.tokenNanos());
      // Handed out before the 300 ms decode step after it ends (and before it starts, in fact).
      assertThat((first - p.tokenNanos()) / 1e6).isLessThan(DECODE_MS / 3.0);
      assertThat(t.tokenNanos).hasSize(3);
    }
  }
}
