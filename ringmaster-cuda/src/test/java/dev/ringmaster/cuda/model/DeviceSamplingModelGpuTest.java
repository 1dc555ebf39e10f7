package dev.ringmaster.cuda.model;

import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.exact;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.fixture;
import static dev.ringmaster.cuda.model.CudaCausalLmGpuTest.promptOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The GPU model's sampled decode steps ({@link CudaCausalLm#forwardSample}: the step's graph
 * replay, then the device sampler, constrained rows with their allowed-token masks) against the CPU
 * sampler on the same model's logits, step by step on two identical cache sets fed the same tokens.
 * The samplers draw from the same counter based generator, so tokens agree except where a draw
 * falls on a float rounding edge.
 */
@Tag("gpu")
class DeviceSamplingModelGpuTest {
  private static final int STEPS = 8;
  private static final int BANNED = 5;

  @Test
  void sampledDecodeStepsMatchTheCpuSamplerOnTheSameLogits() throws IOException {
    Path dir = fixture("deepseek_v3_bf16");
    int[] base = promptOf(dir);
    int[][] prompts = {
      base, Arrays.copyOf(base, 11), Arrays.copyOfRange(base, 2, 20), Arrays.copyOf(base, 5)
    };
    int b = prompts.length;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact())) {
      int vocab = lm.config().vocabSize();
      KvCache[] onDevice = new KvCache[b];
      KvCache[] onHost = new KvCache[b];
      int[] next = new int[b];
      for (int s = 0; s < b; s++) {
        onDevice[s] = lm.newCache();
        onHost[s] = lm.newCache();
        BatchLayout l = BatchLayout.single(prompts[s].length, 0);
        int[] last = {prompts[s].length - 1};
        next[s] = lm.forwardGreedy(prompts[s], l, new KvCache[] {onDevice[s]}, last)[0];
        lm.forwardGreedy(prompts[s], l, new KvCache[] {onHost[s]}, last);
      }
      Map<Integer, Integer> seen = new LinkedHashMap<>();
      for (int t : prompts[2]) {
        seen.putIfAbsent(t, 0);
      }
      int[] one = {0, 1, 2, 3, 4};
      int[] rows = {0, 1, 2, 3};
      int equal = 0;
      int greedyEqual = 0;
      double worstLogprob = 0;
      SamplingBatch batch = new SamplingBatch();
      for (int step = 0; step < STEPS; step++) {
        batch.clear();
        batch.addRow(0f, 0, 1f, 0f, 0, step, 1f, 0f, 0f, -1);
        batch.addRow(0.8f, 0, 0.95f, 0f, 11, step, 1f, 0f, 0f, 3);
        batch.addRow(1f, 20, 1f, 0f, 12, step, 1.3f, 0.2f, 0.1f, 0);
        seen.forEach(batch::addSeenToken);
        batch.addRow(0.7f, 0, 1f, 0.1f, 13, step, 1f, 0f, 0f, -1);
        batch.addBias(BANNED, -100f);
        int[] pos = new int[b];
        for (int s = 0; s < b; s++) {
          pos[s] = prompts[s].length + step;
        }
        BatchLayout layout = new BatchLayout(one, pos);
        SampledTokens dev = lm.forwardSample(next, layout, onDevice, rows, batch);
        SampledTokens host = batch.sampleOnCpu(lm.forward(next, layout, onHost, rows), vocab);
        for (int s = 0; s < b; s++) {
          equal += dev.tokens()[s] == host.tokens()[s] ? 1 : 0;
        }
        greedyEqual += dev.tokens()[0] == host.tokens()[0] ? 1 : 0;
        for (int s : new int[] {1, 2}) {
          if (dev.tokens()[s] == host.tokens()[s]) {
            worstLogprob = Math.max(worstLogprob, Math.abs(dev.logprobs()[s] - host.logprobs()[s]));
          }
        }
        assertThat(dev.tokens()[3]).as("a token banned by logit_bias").isNotEqualTo(BANNED);
        seen.merge(dev.tokens()[2], 1, Integer::sum);
        next = dev.tokens().clone(); // both cache sets go on with the same tokens
      }
      System.out.printf(
          "device vs CPU sampler on the same logits: %d/%d tokens equal, worst chosen-token"
              + " logprob difference %.2e%n",
          equal, STEPS * b, worstLogprob);
      assertThat(greedyEqual).as("greedy row").isEqualTo(STEPS);
      assertThat(equal).as("tokens equal").isGreaterThanOrEqualTo(STEPS * b - 2);
      assertThat(worstLogprob).as("chosen-token logprobs").isLessThan(1e-3);
      for (int s = 0; s < b; s++) {
        onDevice[s].close();
        onHost[s].close();
      }
    }
  }

  private static long[] mask(SplittableRandom r, int vocab, double density) {
    long[] m = new long[(vocab + 63) / 64];
    m[0] = 1L << r.nextInt(64); // never empty
    for (int t = 0; t < vocab; t++) {
      if (r.nextDouble() < density) {
        m[t >>> 6] |= 1L << t;
      }
    }
    return m;
  }

  private static boolean allows(long[] m, int t) {
    return (m[t >>> 6] & (1L << t)) != 0;
  }

  @Test
  void constrainedDecodeStepsSampleOnTheDeviceAsTheHostDoes() throws IOException {
    Path dir = fixture("deepseek_v3_bf16");
    int[] base = promptOf(dir);
    int[][] prompts = {base, Arrays.copyOf(base, 7), Arrays.copyOfRange(base, 1, 15)};
    int b = prompts.length;
    SplittableRandom r = new SplittableRandom(26);
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact())) {
      int vocab = lm.config().vocabSize();
      KvCache[] onDevice = new KvCache[b];
      KvCache[] onHost = new KvCache[b];
      int[] next = new int[b];
      for (int s = 0; s < b; s++) {
        onDevice[s] = lm.newCache();
        onHost[s] = lm.newCache();
        BatchLayout l = BatchLayout.single(prompts[s].length, 0);
        int[] last = {prompts[s].length - 1};
        next[s] = lm.forwardGreedy(prompts[s], l, new KvCache[] {onDevice[s]}, last)[0];
        lm.forwardGreedy(prompts[s], l, new KvCache[] {onHost[s]}, last);
      }
      int[] one = {0, 1, 2, 3};
      int[] rows = {0, 1, 2};
      int equal = 0;
      SamplingBatch batch = new SamplingBatch();
      for (int step = 0; step < STEPS; step++) {
        long[] greedyMask = mask(r, vocab, 0.05);
        long[] sampledMask = mask(r, vocab, 0.2);
        CompletableFuture<long[]> pending = new CompletableFuture<>();
        batch.clear();
        batch.addRow(0f, 0, 1f, 0f, 0, step, 1f, 0f, 0f, -1);
        batch.setAllowedTokens(greedyMask);
        batch.addRow(0.8f, 0, 0.95f, 0f, 11, step, 1f, 0f, 0f, 2);
        batch.setAllowedTokens(pending); // as a mask thread computes it beside the forward
        batch.addRow(0.7f, 0, 1f, 0.1f, 13, step, 1f, 0f, 0f, -1); // plain
        CompletableFuture.delayedExecutor(20, TimeUnit.MILLISECONDS)
            .execute(() -> pending.complete(sampledMask));
        int[] pos = new int[b];
        for (int s = 0; s < b; s++) {
          pos[s] = prompts[s].length + step;
        }
        BatchLayout layout = new BatchLayout(one, pos);
        SampledTokens dev = lm.forwardSample(next, layout, onDevice, rows, batch);
        SampledTokens host = batch.sampleOnCpu(lm.forward(next, layout, onHost, rows), vocab);
        assertThat(dev.tokens()[0]).as("masked greedy, step %d", step).isEqualTo(host.tokens()[0]);
        assertThat(allows(greedyMask, dev.tokens()[0])).isTrue();
        assertThat(allows(sampledMask, dev.tokens()[1])).isTrue();
        for (int s = 0; s < b; s++) {
          equal += dev.tokens()[s] == host.tokens()[s] ? 1 : 0;
        }
        next = dev.tokens().clone();
      }
      assertThat(equal).as("tokens equal").isGreaterThanOrEqualTo(STEPS * b - 2);
      for (int s = 0; s < b; s++) {
        onDevice[s].close();
        onHost[s].close();
      }
    }
  }

  @Test
  void sampledPrefillRowsMatchTheCpuSamplerOnTheSameLogits() throws IOException {
    Path dir = fixture("deepseek_v3_bf16");
    int[] base = promptOf(dir);
    int[][] prompts = {base, Arrays.copyOf(base, 9), Arrays.copyOfRange(base, 3, 17)};
    int b = prompts.length;
    int total = 0;
    int[] starts = new int[b + 1];
    for (int s = 0; s < b; s++) {
      total += prompts[s].length;
      starts[s + 1] = total;
    }
    int[] tokens = new int[total];
    int[] pos = new int[total];
    int[] last = new int[b];
    for (int s = 0; s < b; s++) {
      for (int i = 0; i < prompts[s].length; i++) {
        tokens[starts[s] + i] = prompts[s][i];
        pos[starts[s] + i] = i;
      }
      last[s] = starts[s + 1] - 1;
    }
    BatchLayout layout = new BatchLayout(starts, pos);
    SamplingBatch batch = new SamplingBatch();
    batch.addRow(0.9f, 0, 0.9f, 0f, 21, 0, 1f, 0f, 0f, 2);
    batch.addRow(0f, 0, 1f, 0f, 0, 0, 1f, 0f, 0f, 0);
    batch.setAllowedTokens(new long[] {0b1110_0000L}); // a constrained row: tokens 5, 6, 7
    batch.addRow(1f, 10, 1f, 0f, 22, 0, 1f, 0f, 0f, -1);
    batch.addBias(BANNED, -100f);
    try (CudaCausalLm lm = CudaCausalLm.load(dir, exact())) {
      KvCache[] a = new KvCache[b];
      KvCache[] c = new KvCache[b];
      for (int s = 0; s < b; s++) {
        a[s] = lm.newCache();
        c[s] = lm.newCache();
      }
      SampledTokens dev = lm.forwardSample(tokens, layout, a, last, batch);
      SampledTokens host =
          batch.sampleOnCpu(lm.forward(tokens, layout, c, last), lm.config().vocabSize());
      assertThat(dev.tokens())
          .as("prefill rows sampled on the device")
          .containsExactly(host.tokens());
      assertThat(Math.abs(dev.logprobs()[0] - host.logprobs()[0])).isLessThan(1e-3f);
      assertThat(dev.tokens()[1]).isBetween(5, 7);
      assertThat(Math.abs(dev.logprobs()[1] - host.logprobs()[1])).isLessThan(1e-3f);
      assertThat(dev.topIds(0, 2)).containsExactly(host.topIds(0, 2));
      for (int s = 0; s < b; s++) {
        a[s].close();
        c[s].close();
      }
    }
  }
}
