package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.BatchConfig;
import dev.ringmaster.engine.batch.BatchEngine;
import dev.ringmaster.engine.batch.EngineRequest;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Prefix-cache pages on the GPU: a page is one block of the paged latent cache, shared by reference
 * count. A prefill that starts after attached pages computes what a full prefill does (within the
 * bf16 tolerance of {@link CudaCausalLmGpuTest}: the chunk shapes differ), blocks go back to the
 * pool when their last holder lets go, and the engine's greedy outputs with the radix cache equal
 * those without it.
 */
@Tag("gpu")
class PrefixCacheGpuTest {
  private static final int PAGE = 4;

  /**
   * Blocks of one page, and the CUDA-core expert kernels: the tensor-core ones corrupt a token of
   * some steps of more than 128 tokens on this fixture's shape ({@link LongPrefillGpuTest}), which
   * would make the cache-off run (one 300-token prefill step) differ from the cache-on one for a
   * reason that is not the cache.
   */
  private static CudaModelOptions options() {
    CudaModelOptions o = CudaCausalLmGpuTest.exact().withBlockSize(PAGE);
    return o.withTuning(o.tuning().with("moe-mma-min-tokens", 1 << 20));
  }

  @Test
  void prefillAfterAttachedPagesMatchesAFullPrefillAndBlocksComeBack() throws IOException {
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    int[] prompt = CudaCausalLmGpuTest.promptOf(dir);
    int pages = (prompt.length - 1) / PAGE;
    assertThat(pages).as("the fixture prompt spans whole pages").isGreaterThanOrEqualTo(2);
    int cached = pages * PAGE;
    try (CudaCausalLm lm = CudaCausalLm.load(dir, options())) {
      int vocab = lm.config().vocabSize();
      int freeAtStart = lm.freeKvBlocks();
      KvCache full = lm.newCache();
      float[] fullLogits = lastLogits(lm, prompt, 0, full);
      List<KvCache.Page> held = new ArrayList<>();
      for (int p = 0; p < pages; p++) {
        held.add(full.retainPage(p, PAGE));
      }
      full.close(); // the pages outlive the sequence that wrote them
      assertThat(lm.freeKvBlocks()).isEqualTo(freeAtStart - pages);

      KvCache reuse = lm.newCache();
      reuse.attachPages(held, PAGE);
      assertThat(reuse.length()).isEqualTo(cached);
      int[] rest = Arrays.copyOfRange(prompt, cached, prompt.length);
      float[] reuseLogits = lastLogits(lm, rest, cached, reuse);
      assertThat(CudaCausalLmGpuTest.relDiff(reuseLogits, fullLogits))
          .as("last-token logits after %d cached positions vs a full prefill", cached)
          .isLessThanOrEqualTo(2e-2);
      assertThat(CudaCausalLmGpuTest.argmax(reuseLogits, 0, vocab))
          .isEqualTo(CudaCausalLmGpuTest.argmax(fullLogits, 0, vocab));

      held.forEach(KvCache.Page::close);
      assertThat(lm.freeKvBlocks())
          .as("the attached pages are still held by the reusing cache")
          .isLessThan(freeAtStart);
      reuse.close();
      assertThat(lm.freeKvBlocks()).isEqualTo(freeAtStart);
    }
  }

  @Test
  void greedyOutputsWithTheRadixCacheEqualOutputsWithout() throws Exception {
    Path dir = CudaCausalLmGpuTest.fixture("deepseek_v3_bf16");
    try (CudaCausalLm lm = CudaCausalLm.load(dir, options())) {
      List<int[]> prompts = prompts(lm.config().vocabSize());
      Run off = run(lm, prompts, false);
      Run on = run(lm, prompts, true);
      assertThat(on.cachedTokens()).as("the cache was hit").isGreaterThan(0);
      assertThat(off.cachedTokens()).isZero();
      for (int i = 0; i < prompts.size(); i++) {
        assertThat(on.outputs().get(i)).as("request %d", i).containsExactly(off.outputs().get(i));
      }
    }
  }

  private static float[] lastLogits(CudaCausalLm lm, int[] tokens, int start, KvCache cache) {
    return lm.forward(
        tokens,
        BatchLayout.single(tokens.length, start),
        new KvCache[] {cache},
        new int[] {tokens.length - 1});
  }

  /** Three groups of four prompts sharing a prefix of 17-25 tokens, random suffixes. */
  private static List<int[]> prompts(int vocab) {
    SplittableRandom r = new SplittableRandom(24);
    int range = Math.min(vocab - 2, 300);
    List<int[]> out = new ArrayList<>();
    for (int g = 0; g < 3; g++) {
      int[] prefix = new int[17 + g * PAGE];
      for (int i = 0; i < prefix.length; i++) {
        prefix[i] = 2 + r.nextInt(range);
      }
      for (int q = 0; q < 4; q++) {
        int[] p = Arrays.copyOf(prefix, prefix.length + 1 + r.nextInt(6));
        for (int i = prefix.length; i < p.length; i++) {
          p[i] = 2 + r.nextInt(range);
        }
        out.add(p);
      }
    }
    return out;
  }

  private record Run(List<int[]> outputs, long cachedTokens) {}

  /** Two waves of every prompt (the second finds the first's pages cached), greedy, 6 tokens. */
  private static Run run(CudaCausalLm lm, List<int[]> prompts, boolean radix) throws Exception {
    int blocks = (int) (lm.kvCapacityTokens().getAsLong() / PAGE);
    BatchConfig cfg = new BatchConfig(8, 256, 64, PAGE, blocks).withRadixCache(radix);
    List<int[]> outputs = new ArrayList<>();
    long cached = 0;
    try (BatchEngine engine = BatchEngine.start(lm, cfg)) {
      for (int wave = 0; wave < 2; wave++) {
        List<Tokens> ts = new ArrayList<>();
        for (int[] prompt : prompts) {
          Tokens t = new Tokens();
          ts.add(t);
          SamplingParams greedy = new SamplingParams(0, 1, 0, 0, 6, true, List.of());
          engine.submit(new EngineRequest(null, prompt, greedy, new int[] {1}, -1, t));
        }
        for (Tokens t : ts) {
          RequestOutcome o = t.done.get(60, TimeUnit.SECONDS);
          assertThat(o.reason()).isEqualTo(FinishReason.LENGTH);
          cached += o.cachedTokens();
          outputs.add(t.ids());
        }
      }
      assertThat(engine.awaitIdle(Duration.ofSeconds(10))).isTrue();
      engine.flushCache().get(10, TimeUnit.SECONDS);
      assertThat(engine.pool().used()).as("no block leaked").isZero();
    }
    return new Run(outputs.subList(prompts.size(), outputs.size()), cached);
  }

  /** Collects a request's tokens and its outcome. */
  private static final class Tokens implements TokenListener {
    private final List<Integer> ids = new ArrayList<>();
    final CompletableFuture<RequestOutcome> done = new CompletableFuture<>();

    @Override
    public synchronized boolean onToken(TokenEvent event) {
      ids.add(event.token());
      return true;
    }

    @Override
    public void onFinish(RequestOutcome outcome) {
      done.complete(outcome);
    }

    synchronized int[] ids() {
      return ids.stream().mapToInt(Integer::intValue).toArray();
    }
  }
}
