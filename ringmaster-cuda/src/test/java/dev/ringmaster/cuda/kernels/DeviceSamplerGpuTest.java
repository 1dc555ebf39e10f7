package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.engine.Sampler;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import dev.ringmaster.runtime.sampling.SamplingDistribution;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The device sampler ({@code rm_sample_rows}) against the CPU reference: the same distribution
 * (chi-square over many draws), the same tokens per (seed, step) up to float rounding, greedy rows
 * equal to the argmax, logprobs within 1e-4, and the same results replayed from a CUDA graph whose
 * buffers change between replays.
 */
@Tag("gpu")
class DeviceSamplerGpuTest {
  private static final float[] LOGITS = {2f, 1f, 0.5f, 0f, -1f, 3f, 1.5f, -2f, 2.5f, 0.25f};
  private static final int DRAWS = 40_000;
  private static final int[] SEEN = {5, 8, 0, 3};
  private static final int[] OUT_COUNTS = {3, 1, 0, 2};

  /** Rows of one parameter set, one step each, optionally with penalties and bias. */
  private static SamplingBatch rows(
      int n,
      float t,
      int k,
      float p,
      float minP,
      float rep,
      float freq,
      float pres,
      boolean bias,
      int logprobs) {
    SamplingBatch b = new SamplingBatch();
    for (int r = 0; r < n; r++) {
      b.addRow(t, k, p, minP, 4321, r, rep, freq, pres, logprobs);
      if (rep != 1 || freq != 0 || pres != 0) {
        for (int e = 0; e < SEEN.length; e++) {
          b.addSeenToken(SEEN[e], OUT_COUNTS[e]);
        }
      }
      if (bias) {
        b.addBias(7, 4f);
        b.addBias(2, -1.5f);
      }
    }
    return b;
  }

  private static float[] repeat(float[] row, int n) {
    float[] out = new float[row.length * n];
    for (int r = 0; r < n; r++) {
      System.arraycopy(row, 0, out, r * row.length, row.length);
    }
    return out;
  }

  /** Samples {@code batch} over {@code logits} on the device (a fresh copy of the logits). */
  private static SampledTokens onDevice(
      DeviceScope s, float[] logits, int vocab, SamplingBatch batch, int topStride) {
    SamplingBuffers buf =
        new SamplingBuffers(
            batch.rows(),
            Math.max(1, batch.seenTokenEntries()),
            Math.max(1, batch.biasEntries()),
            topStride);
    try (buf) {
      DeviceBuffer d = s.f32(logits);
      return Gpu.kernels().deviceSampler().sample(s.stream(), d.ptr(), vocab, batch, buf);
    }
  }

  private static int agreement(int[] a, int[] b) {
    int same = 0;
    for (int i = 0; i < a.length; i++) {
      same += a[i] == b[i] ? 1 : 0;
    }
    return same;
  }

  @ParameterizedTest(
      name = "T={0} top_k={1} top_p={2} min_p={3} rep={4} freq={5} pres={6} bias={7}")
  @CsvSource({
    "1.0,0,1.0,0,1,0,0,false",
    "0.7,0,1.0,0,1,0,0,false",
    "1.0,4,1.0,0,1,0,0,false",
    "1.0,0,0.8,0,1,0,0,false",
    "1.0,0,0.3,0,1,0,0,false",
    "1.2,6,0.9,0,1,0,0,false",
    "1.0,0,1.0,0.2,1,0,0,false",
    "0.8,5,0.95,0.1,1,0,0,false",
    "1.0,0,0.9,0,1.3,0.4,0.6,false",
    "1.0,0,1.0,0,1,0,0,true",
    "0.9,0,0.95,0.05,1.2,0.2,0.3,true"
  })
  void drawsFollowTheCpuSamplersDistribution(
      float t, int k, float p, float minP, float rep, float freq, float pres, boolean bias) {
    int vocab = LOGITS.length;
    SamplingBatch batch = rows(DRAWS, t, k, p, minP, rep, freq, pres, bias, -1);
    float[] logits = repeat(LOGITS, DRAWS);
    int[] cpu = batch.sampleOnCpu(logits.clone(), vocab).tokens();
    Gpu.run(
        s -> {
          int[] gpu = onDevice(s, logits, vocab, batch, 0).tokens();
          int[] counts = new int[vocab];
          for (int g : gpu) {
            counts[g]++;
          }
          double[] adj =
              SamplingDistribution.adjusted(
                  LOGITS,
                  bias ? new int[] {7, 2} : new int[0],
                  bias ? new float[] {4f, -1.5f} : new float[0],
                  rep != 1 || freq != 0 || pres != 0 ? SEEN : new int[0],
                  rep != 1 || freq != 0 || pres != 0 ? OUT_COUNTS : new int[0],
                  rep,
                  freq,
                  pres);
          double[] probs = SamplingDistribution.probabilities(adj, t, k, p, minP);
          assertThat(SamplingDistribution.misfit(counts, probs)).isNull();
          // The same Philox draw and id order as the CPU: the same tokens but for rounding.
          assertThat(agreement(gpu, cpu)).isGreaterThan(DRAWS * 999 / 1000);
        });
  }

  @ParameterizedTest(name = "vocab {0}, T={1} top_k={2} top_p={3} min_p={4}")
  @CsvSource({
    "129280,0.8,0,0.95,0",
    "129280,1.0,50,1.0,0",
    "102400,0.7,40,0.9,0.05",
    "151936,1.1,2000,0.99,0",
    "1002,1.0,0,0.5,0"
  })
  void largeVocabulariesGiveTheCpuTokensAndRepeatPerSeedAndStep(
      int vocab, float t, int k, float p, float minP) {
    Rand r = new Rand();
    int n = 64;
    float[] logits = new float[n * vocab];
    for (int i = 0; i < logits.length; i++) {
      logits[i] = (float) (r.random().nextGaussian() * 3);
    }
    SamplingBatch batch = rows(n, t, k, p, minP, 1, 0, 0, false, -1);
    int[] cpu = batch.sampleOnCpu(logits, vocab).tokens();
    Gpu.run(
        s -> {
          int[] gpu = onDevice(s, logits, vocab, batch, 0).tokens();
          assertThat(agreement(gpu, cpu)).as("seed %d", r.seed()).isGreaterThanOrEqualTo(n - 2);
          assertThat(onDevice(s, logits, vocab, batch, 0).tokens())
              .as("same seed and step, same token")
              .containsExactly(gpu);
          SamplingBatch later = new SamplingBatch();
          for (int i = 0; i < n; i++) {
            later.addRow(t, k, p, minP, 4321, i + 1000, 1, 0, 0, -1);
          }
          assertThat(agreement(onDevice(s, logits, vocab, later, 0).tokens(), gpu))
              .as("other steps draw other tokens")
              .isLessThan(n / 2);
        });
  }

  @Test
  void greedyRowsTakeTheArgmaxAndLogprobsMatchTheCpu() {
    Rand r = new Rand();
    int vocab = 129_280;
    int n = 6;
    float[] logits = r.uniform(n * vocab, 8f);
    logits[vocab + 5] = 20f;
    logits[vocab + 70_001] = 20f; // a tie in row 1: the lower id wins
    SamplingBatch b = new SamplingBatch();
    b.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, 5); // greedy with logprobs
    b.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, 3);
    b.addRow(0.9f, 1, 1, 0, 1, 0, 1, 0, 0, -1); // top-k 1 is greedy
    b.addRow(0, 0, 1, 0, 1, 0, 1.5f, 0.5f, 0, 4); // greedy after penalties
    b.addSeenToken(Sampler.argmax(logits, 3 * vocab, vocab), 2);
    b.addRow(0.8f, 0, 0.95f, 0, 9, 3, 1, 0, 0, 20); // sampled, with 20 alternatives
    b.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, -1);
    b.addBias(123, 100f); // bias makes 123 the argmax
    SampledTokens cpu = b.sampleOnCpu(logits.clone(), vocab);
    Gpu.run(
        s -> {
          SampledTokens gpu = onDevice(s, logits, vocab, b, 20);
          assertThat(gpu.tokens()[1]).isEqualTo(5);
          assertThat(gpu.tokens()[5]).isEqualTo(123);
          for (int row : new int[] {0, 1, 2, 3, 5}) {
            assertThat(gpu.tokens()[row]).as("greedy row %d", row).isEqualTo(cpu.tokens()[row]);
          }
          assertThat(gpu.tokens()[4]).isEqualTo(cpu.tokens()[4]);
          for (int row = 0; row < 5; row++) {
            int top = b.topLogprobs()[row];
            if (top < 0) {
              assertThat(gpu.logprobs()[row]).isNaN();
              continue;
            }
            assertThat(gpu.logprobs()[row]).isCloseTo(cpu.logprobs()[row], within(1e-4f));
            assertThat(gpu.topIds(row, top)).containsExactly(cpu.topIds(row, top));
            float[] g = gpu.topLogprobs(row, top);
            float[] c = cpu.topLogprobs(row, top);
            for (int j = 0; j < top; j++) {
              assertThat(g[j]).as("row %d alternative %d", row, j).isCloseTo(c[j], within(1e-4f));
            }
          }
        });
  }

  @Test
  void aCapturedGraphReplaysWithNewParametersEachTime() {
    Rand r = new Rand();
    int vocab = 32_000;
    int n = 16;
    float[] logits = new float[n * vocab];
    for (int i = 0; i < logits.length; i++) {
      logits[i] = (float) (r.random().nextGaussian() * 2.5);
    }
    Gpu.run(
        s -> {
          DeviceBuffer d = s.alloc(4L * logits.length);
          try (SamplingBuffers buf = new SamplingBuffers(n, 4096, 64, 4)) {
            DeviceSampler sampler = Gpu.kernels().deviceSampler();
            CudaGraph[] graph = new CudaGraph[1];
            IntConsumer step =
                v -> {
                  // The graph's inputs: fresh logits (bias and penalties edit them in place) and
                  // a batch whose parameters change with v.
                  SamplingBatch b = new SamplingBatch();
                  for (int i = 0; i < n - v % 3; i++) {
                    b.addRow(
                        0.6f + 0.2f * v,
                        v == 1 ? 30 : 0,
                        1f - 0.03f * v,
                        0.01f * v,
                        77 + v,
                        v * 100 + i,
                        v == 2 ? 1.3f : 1f,
                        0.1f * v,
                        0,
                        v == 0 ? 2 : -1);
                    if (v == 2) {
                      for (int t = 0; t < 50; t++) {
                        b.addSeenToken(t * 7 + i, t % 3);
                      }
                    }
                    b.addBias(i, 3f);
                  }
                  SampledTokens cpu = b.sampleOnCpu(logits.clone(), vocab);
                  d.upload(s.stream(), logits);
                  buf.upload(b, n, s.stream());
                  graph[0].launch(s.stream());
                  SampledTokens gpu = buf.download(s.stream(), b.rows());
                  assertThat(agreement(gpu.tokens(), cpu.tokens()))
                      .as("replay %d, seed %d", v, r.seed())
                      .isGreaterThanOrEqualTo(b.rows() - 1);
                  if (v == 0) {
                    assertThat(gpu.logprobs()[0]).isCloseTo(cpu.logprobs()[0], within(1e-4f));
                  }
                };
            // Capture with a first batch in the buffers, then replay with others.
            SamplingBatch first = rows(n, 1, 0, 1, 0, 1, 0, 0, false, -1);
            d.upload(s.stream(), logits);
            buf.upload(first, n, s.stream());
            s.stream().synchronize();
            graph[0] = s.stream().capture(() -> sampler.launch(s.stream(), d.ptr(), n, vocab, buf));
            try {
              for (int v = 0; v < 4; v++) {
                step.accept(v);
              }
            } finally {
              graph[0].close();
            }
          }
        });
  }
}
