package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.constraint.ConstraintState;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.ForwardingLanguageModel;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A constrained row's mask is asked for after its previous token is accepted and before the forward
 * that needs it is launched, computed while that forward runs, and waited for only by the sampler:
 * a mask that cannot finish until its forward has started still lets every step run.
 */
class MaskOverlapTest {
  private static final int ALLOWED = 7;
  private static final int STEPS = 6;
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

  /** Logs each forward's start and lets one pending mask finish per forward. */
  private static final class Gate extends ForwardingLanguageModel {
    final List<String> events;
    final Semaphore started = new Semaphore(0);

    Gate(List<String> events) {
      super(lm);
      this.events = events;
    }

    @Override
    public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      events.add("forward");
      started.release();
      return super.forward(tokens, layout, caches, logitRows);
    }

    @Override
    public void close() {}
  }

  /** Allows one token only; its mask finishes only once a forward has started. */
  private static final class GatedConstraint implements ConstraintState {
    final List<String> events;
    final Semaphore forwards;
    final long[] mask;
    CompletableFuture<long[]> pending;

    GatedConstraint(List<String> events, Semaphore forwards, int vocab) {
      this.events = events;
      this.forwards = forwards;
      this.mask = new long[(vocab + 63) >>> 6];
      mask[ALLOWED >>> 6] |= 1L << ALLOWED;
    }

    @Override
    public long[] allowedTokens() {
      return mask;
    }

    @Override
    public CompletableFuture<long[]> allowedTokensAsync(Executor executor) {
      if (pending == null) {
        events.add("ask");
        pending =
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    if (!forwards.tryAcquire(10, TimeUnit.SECONDS)) {
                      throw new IllegalStateException("no forward started while the mask waited");
                    }
                  } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                  }
                  events.add("mask");
                  return mask;
                },
                executor);
      }
      return pending;
    }

    @Override
    public void accept(int token) {
      pending.join();
      pending = null;
      events.add("accept " + token);
    }

    @Override
    public boolean accepting() {
      return false;
    }

    @Override
    public boolean isComplete() {
      return false;
    }

    @Override
    public byte[] forcedBytes(int maxBytes) {
      return new byte[0];
    }

    @Override
    public int[] jumpForward(int token, int maxBytes) {
      return null;
    }
  }

  @Test
  void theMaskIsComputedWhileItsForwardRuns() throws Exception {
    for (boolean overlap : new boolean[] {true, false}) {
      List<String> events = Collections.synchronizedList(new ArrayList<>());
      Gate model = new Gate(events);
      GatedConstraint constraint =
          new GatedConstraint(events, model.started, lm.config().vocabSize());
      BatchConfig config = new BatchConfig(64, 256, 64, 4, 4096).withOverlap(overlap);
      try (BatchEngine engine = BatchEngine.start(model, config)) {
        Collector c = new Collector();
        engine.submit(
            new EngineRequest(
                null,
                new int[] {3, 4, 5},
                SamplingParams.greedy(STEPS),
                new int[0],
                -1,
                c,
                constraint));
        assertThat(c.await().reason()).as("overlap %s", overlap).isEqualTo(FinishReason.LENGTH);
        assertThat(c.ids()).as("overlap %s", overlap).containsOnly(ALLOWED).hasSize(STEPS);
      }
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < STEPS; i++) {
        expected.addAll(List.of("ask", "forward", "mask", "accept " + ALLOWED));
      }
      assertThat(events).as("overlap %s", overlap).containsExactlyElementsOf(expected);
    }
  }
}
