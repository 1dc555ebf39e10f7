package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.backend.cpu.model.CausalLm;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A mixed step (decode rows of four sequences, a 150-token prompt and the second chunk of another
 * prompt, in one forward) on the random V2-Lite-attention model, whose 512-wide latent takes the
 * tensor-core split kernels by list: the decode rows take the split kernels and the prompt runs the
 * GEMM path, and the absorbed projections run over the decode rows (and absorbed runs) only. Every
 * row's logits are checked against the CPU engine on the same step, the step is run in two token
 * orders (decode rows first, and decode rows between the prompt runs) whose rows must carry the
 * same bits, and against the same tokens run as separate steps (the prompts alone: the same bits;
 * the decode rows as a decode step, which takes other kernels: within the bf16 tolerance, with the
 * same greedy token). Variants: expanded prompt runs (the default), absorbed prompt runs
 * (mla-expanded-prefill off) and the CUDA-core split kernel (mla-tensor-cores off: every token
 * absorbed).
 */
@Tag("gpu")
class MixedStepGpuTest {
  /** Relative logits tolerance of the bf16 cache and weights, as in {@link CudaCausalLmGpuTest}. */
  private static final double BF16_TOL = 2e-2;

  /** Greedy rows whose CPU top-2 margin is below this are not compared (bf16 noise). */
  private static final double MIN_MARGIN = 0.05;

  private static final int VOCAB = 512;

  /** Decode rows: sequences with a history of these lengths, one new token each. */
  private static final int[] DECODE_HISTORY = {20, 37, 5, 300};

  private static final int PROMPT = 150;

  /** The chunked prompt: this many tokens in the history, {@link #CHUNK} in the mixed step. */
  private static final int CHUNKED_HISTORY = 40;

  private static final int CHUNK = 60;

  @TempDir Path tmp;

  /** One sequence's part of the step: its history, then the step's tokens. */
  private record Part(int[] history, int[] tokens) {}

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"expanded prompt runs", "absorbed prompt runs", "CUDA-core split"})
  void mixedStepMatchesTheCpuAndSeparateSteps(String variant) throws IOException {
    Path dir = FusedMlaModelGpuTest.v2LiteAttentionModel(tmp);
    CudaModelOptions o = CudaCausalLmGpuTest.exact();
    o =
        switch (variant) {
          case "absorbed prompt runs" ->
              o.withTuning(o.tuning().with("mla-expanded-prefill", false));
          case "CUDA-core split" -> o.withTuning(o.tuning().with("mla-tensor-cores", false));
          default -> o;
        };
    SplittableRandom r = new SplittableRandom(19);
    List<Part> parts = new ArrayList<>();
    for (int len : DECODE_HISTORY) {
      parts.add(new Part(r.ints(len, 2, VOCAB).toArray(), new int[] {2 + r.nextInt(VOCAB - 2)}));
    }
    parts.add(new Part(new int[0], r.ints(PROMPT, 2, VOCAB).toArray()));
    parts.add(
        new Part(r.ints(CHUNKED_HISTORY, 2, VOCAB).toArray(), r.ints(CHUNK, 2, VOCAB).toArray()));
    // Parts 0-3 decode, 4 is the prompt, 5 the prompt's second chunk.
    int[] decodeFirst = {0, 1, 2, 3, 4, 5};
    int[] interleaved = {4, 0, 5, 1, 2, 3};

    float[][] cpu;
    try (CausalLm lm = CausalLm.load(dir)) {
      cpu = step(lm, parts, decodeFirst, true);
    }
    try (CudaCausalLm lm = CudaCausalLm.load(dir, o)) {
      float[][] gpu = step(lm, parts, decodeFirst, false);
      float[][] gpuInterleaved = step(lm, parts, interleaved, false);
      float[][] decodeStep = step(lm, parts, new int[] {0, 1, 2, 3}, false);
      float[][] promptAlone = step(lm, parts, new int[] {4}, false);
      float[][] chunkAlone = step(lm, parts, new int[] {5}, false);
      double worstCpu = 0;
      double worstDecode = 0;
      for (int p = 0; p < parts.size(); p++) {
        int rows = parts.get(p).tokens().length;
        for (int i = 0; i < rows; i++) {
          float[] got = row(gpu[p], i);
          float[] want = row(cpu[p], i);
          String where = variant + ": part " + p + " row " + i;
          double d = CudaCausalLmGpuTest.relDiff(got, want);
          worstCpu = Math.max(worstCpu, d);
          assertThat(d).as("%s against the CPU", where).isLessThan(BF16_TOL);
          assertThat(Compare.bits(row(gpuInterleaved[p], i)))
              .as("%s, decode rows between the prompt runs", where)
              .containsExactly(Compare.bits(got));
          float[] alone =
              p < 4 ? row(decodeStep[p], i) : row(p == 4 ? promptAlone[0] : chunkAlone[0], i);
          if (p < 4) {
            double dd = CudaCausalLmGpuTest.relDiff(got, alone);
            worstDecode = Math.max(worstDecode, dd);
            assertThat(dd).as("%s against a decode step", where).isLessThan(BF16_TOL);
            if (CudaCausalLmGpuTest.margin(alone) >= MIN_MARGIN) {
              assertThat(argmax(got)).as("%s greedy token", where).isEqualTo(argmax(alone));
            }
          } else {
            assertThat(Compare.bits(got))
                .as("%s against the prompt run alone", where)
                .containsExactly(Compare.bits(alone));
          }
        }
      }
      System.out.printf(
          "mixed step, %s: worst relative logits diff %.2e against the CPU, %.2e against a decode"
              + " step%n",
          variant, worstCpu, worstDecode);
    }
  }

  /**
   * Runs the history of the parts {@code order} names (each alone, one prefill step per part), then
   * their step tokens as one step in that order with logits for every row; returns each part's
   * logits {@code [tokens, vocab]}, indexed as {@code order} lists them when {@code order} is a
   * subset ({@code order[k]}'s at index {@code order[k]} for the full set, else at {@code k}).
   * {@code roundCache}: round the history's cache to bf16 first, as the GPU stores it (CPU).
   */
  private static float[][] step(
      LanguageModel lm, List<Part> parts, int[] order, boolean roundCache) {
    int n = 0;
    for (int p : order) {
      n += parts.get(p).tokens().length;
    }
    int[] tokens = new int[n];
    int[] positions = new int[n];
    int[] seqStart = new int[order.length + 1];
    KvCache[] caches = new KvCache[order.length];
    int t = 0;
    try {
      for (int k = 0; k < order.length; k++) {
        Part part = parts.get(order[k]);
        caches[k] = lm.newCache();
        int h = part.history().length;
        if (h > 0) {
          lm.forward(
              part.history(),
              BatchLayout.single(h, 0),
              new KvCache[] {caches[k]},
              new int[] {h - 1});
          if (roundCache) {
            roundToBf16(lm, caches[k]);
          }
        }
        seqStart[k] = t;
        for (int i = 0; i < part.tokens().length; i++, t++) {
          tokens[t] = part.tokens()[i];
          positions[t] = h + i;
        }
      }
      seqStart[order.length] = t;
      int[] rows = new int[n];
      for (int i = 0; i < n; i++) {
        rows[i] = i;
      }
      float[] logits = lm.forward(tokens, new BatchLayout(seqStart, positions), caches, rows);
      boolean full = order.length == parts.size();
      float[][] out = new float[full ? parts.size() : order.length][];
      for (int k = 0; k < order.length; k++) {
        out[full ? order[k] : k] =
            Arrays.copyOfRange(logits, seqStart[k] * VOCAB, seqStart[k + 1] * VOCAB);
      }
      return out;
    } finally {
      for (KvCache c : caches) {
        if (c != null) {
          c.close();
        }
      }
    }
  }

  private static void roundToBf16(LanguageModel lm, KvCache cache) {
    for (int layer = 0; layer < lm.config().numLayers(); layer++) {
      for (float[] a : new float[][] {cache.a(layer), cache.b(layer)}) {
        for (int i = 0; i < a.length; i++) {
          a[i] = Numerics.bf16ToFloat(Numerics.floatToBf16(a[i]));
        }
      }
    }
  }

  private static float[] row(float[] logits, int i) {
    return Arrays.copyOfRange(logits, i * VOCAB, (i + 1) * VOCAB);
  }

  private static int argmax(float[] x) {
    return CudaCausalLmGpuTest.argmax(x, 0, x.length);
  }
}
