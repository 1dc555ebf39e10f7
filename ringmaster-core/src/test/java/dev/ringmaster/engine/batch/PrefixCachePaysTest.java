package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import dev.ringmaster.testing.RepoPaths;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The prefix cache pays on the CPU, counted in work rather than time: a shared-prefix workload on
 * the embedded model (groups of prompts sharing a 64-token system prompt, one request per group
 * first, then the rest of each group at once) runs through the model exactly the prompt tokens the
 * cache did not hold, so the prefilled tokens fall by the cached fraction, with the same outputs.
 */
class PrefixCachePaysTest {
  private static final int PAGE = 16;
  private static final int GROUPS = 3;
  private static final int PER_GROUP = 4;
  private static final int SYSTEM = 64;
  private static final int QUESTION = 9;
  private static final int OUTPUT = 4;

  /** A model that counts the tokens of every forward step. */
  private static final class Counting implements LanguageModel {
    final LanguageModel inner;
    final AtomicLong tokens = new AtomicLong();

    Counting(LanguageModel inner) {
      this.inner = inner;
    }

    @Override
    public ModelConfig config() {
      return inner.config();
    }

    @Override
    public KvCache newCache() {
      return inner.newCache();
    }

    @Override
    public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
      return inner.newCache(blocks);
    }

    @Override
    public long weightBytes() {
      return inner.weightBytes();
    }

    @Override
    public float[] forward(int[] t, BatchLayout layout, KvCache[] caches, int[] logitRows) {
      tokens.addAndGet(t.length);
      return inner.forward(t, layout, caches, logitRows);
    }

    @Override
    public void close() {
      inner.close();
    }
  }

  /** What a run computed and produced. */
  private record Work(long forwardTokens, long cachedTokens, List<int[]> outputs) {}

  @Test
  void prefilledTokensFallByTheCachedFraction() throws Exception {
    try (CausalLm lm = CausalLm.load(RepoPaths.require("models/sotu-moe"))) {
      List<int[]> prompts = prompts(lm.config().vocabSize());
      Work off = run(lm, prompts, false);
      Work on = run(lm, prompts, true);
      long promptTokens = prompts.stream().mapToLong(p -> p.length).sum();
      long decodeTokens = (long) prompts.size() * (OUTPUT - 1);
      assertThat(off.forwardTokens()).isEqualTo(promptTokens + decodeTokens);
      assertThat(off.cachedTokens()).isZero();
      // Every request after its group's first finds the whole system prompt cached.
      long expected = (long) GROUPS * (PER_GROUP - 1) * SYSTEM;
      assertThat(on.cachedTokens()).isEqualTo(expected);
      assertThat(on.forwardTokens())
          .as("prompt tokens computed: %d of %d", promptTokens - expected, promptTokens)
          .isEqualTo(off.forwardTokens() - expected);
      for (int i = 0; i < prompts.size(); i++) {
        assertThat(on.outputs().get(i)).as("request %d", i).containsExactly(off.outputs().get(i));
      }
    }
  }

  private static List<int[]> prompts(int vocab) {
    SplittableRandom r = new SplittableRandom(5);
    List<int[]> out = new ArrayList<>();
    for (int g = 0; g < GROUPS; g++) {
      int[] system = new int[SYSTEM];
      for (int i = 0; i < SYSTEM; i++) {
        system[i] = 2 + r.nextInt(vocab - 2);
      }
      for (int q = 0; q < PER_GROUP; q++) {
        int[] p = java.util.Arrays.copyOf(system, SYSTEM + QUESTION);
        for (int i = SYSTEM; i < p.length; i++) {
          p[i] = 2 + r.nextInt(vocab - 2);
        }
        out.add(p);
      }
    }
    return out;
  }

  /** Each group's first prompt alone, then all the others at once; greedy. */
  private static Work run(CausalLm lm, List<int[]> prompts, boolean radix) throws Exception {
    Counting model = new Counting(lm);
    BatchConfig cfg = new BatchConfig(16, 64, 256, PAGE, 1024).withRadixCache(radix);
    SamplingParams greedy = new SamplingParams(0, 1, 0, 0, OUTPUT, true, List.of());
    int[][] outputs = new int[prompts.size()][];
    long cached = 0;
    try (BatchEngine engine = BatchEngine.start(model, cfg)) {
      for (int wave = 0; wave < 2; wave++) {
        List<Integer> ids = new ArrayList<>();
        List<Collector> cs = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
          if ((i % PER_GROUP == 0) == (wave == 0)) {
            Collector c = new Collector();
            engine.submit(new EngineRequest(null, prompts.get(i), greedy, new int[] {1}, -1, c));
            ids.add(i);
            cs.add(c);
          }
        }
        for (int k = 0; k < cs.size(); k++) {
          RequestOutcome o = cs.get(k).await();
          assertThat(o.reason()).isEqualTo(FinishReason.LENGTH);
          assertThat(o.preemptions()).isZero();
          cached += o.cachedTokens();
          outputs[ids.get(k)] = cs.get(k).ids();
        }
      }
      assertThat(engine.stats().cachedTokens()).isEqualTo(cached);
    }
    return new Work(model.tokens.get(), cached, List.of(outputs));
  }
}
