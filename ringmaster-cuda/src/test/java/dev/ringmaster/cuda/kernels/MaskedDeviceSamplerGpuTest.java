package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import dev.ringmaster.runtime.sampling.SamplingDistribution;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Allowed-token masks in the device sampler ({@code rm_sample_rows}) against the CPU sampler's
 * masks: masked greedy takes exactly the host's token, masked draws follow the host's distribution
 * (chi-square) and repeat per seed, an allow-all mask changes nothing bit for bit, plain rows of a
 * mixed batch are untouched by their masked neighbours, a mask that allows nothing is refused as
 * the host refuses it, and a captured graph replays with new masks.
 */
@Tag("gpu")
class MaskedDeviceSamplerGpuTest {
  private static final float[] LOGITS = {2f, 1f, 0.5f, 0f, -1f, 3f, 1.5f, -2f, 2.5f, 0.25f};
  private static final long SMALL_MASK = 0b10_0110_0111L; // 0, 1, 2, 5, 6, 9: not 8 (2.5)
  private static final int DRAWS = 40_000;
  private static final int VOCAB = 129_280;

  /** A device sampling of {@code batch}: the tokens and the row buffer as the kernel left it. */
  private record Run(SampledTokens out, float[] logitsAfter) {}

  private static Run onDevice(DeviceScope s, float[] logits, int vocab, SamplingBatch batch) {
    SamplingCapacity c =
        new SamplingCapacity(
            batch.rows(),
            Math.max(1, batch.seenTokenEntries()),
            Math.max(1, batch.biasEntries()),
            20,
            vocab);
    try (SamplingBuffers buf = new SamplingBuffers(c)) {
      DeviceBuffer d = s.f32(logits);
      SampledTokens out =
          Gpu.kernels().deviceSampler().sample(s.stream(), d.ptr(), vocab, batch, buf);
      return new Run(out, s.read(d, logits.length));
    }
  }

  private static float[] gaussian(Rand r, int n, double scale) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) (r.random().nextGaussian() * scale);
    }
    return v;
  }

  /** A mask allowing each token with probability {@code density} and always token {@code must}. */
  private static long[] randomMask(SplittableRandom r, int vocab, double density, int must) {
    long[] m = new long[(vocab + 63) / 64];
    for (int t = 0; t < vocab; t++) {
      if (t == must || r.nextDouble() < density) {
        m[t >>> 6] |= 1L << t;
      }
    }
    return m;
  }

  private static boolean allows(long[] mask, int t) {
    return t >= 0 && t / 64 < mask.length && (mask[t / 64] & (1L << t)) != 0;
  }

  private static int agreement(int[] a, int[] b) {
    int same = 0;
    for (int i = 0; i < a.length; i++) {
      same += a[i] == b[i] ? 1 : 0;
    }
    return same;
  }

  @Test
  void maskedGreedyTakesTheHostSamplersTokenExactly() {
    Rand r = new Rand();
    int n = 64;
    float[] logits = gaussian(r, n * VOCAB, 3);
    double[] densities = {0, 1e-4, 0.01, 0.25, 0.5, 0.99};
    long[][] masks = new long[n][];
    SamplingBatch b = new SamplingBatch();
    for (int row = 0; row < n; row++) {
      boolean penalised = row % 5 == 0;
      b.addRow(0, row % 7 == 3 ? 1 : 0, 1, 0, row, 0, penalised ? 1.3f : 1f, 0, 0, -1);
      if (penalised) {
        for (int t = 0; t < 40; t++) {
          b.addSeenToken(t * 3001 + row, t % 3); // distinct tokens, as the engine gives them
        }
      }
      int favourite = r.nextInt(VOCAB);
      if (row % 4 == 1) {
        b.addBias(favourite, 100f); // a bias on a token the mask may forbid
      }
      masks[row] =
          randomMask(r.random(), VOCAB, densities[row % densities.length], r.nextInt(VOCAB));
      b.setAllowedTokens(masks[row]);
    }
    int[] cpu = b.sampleOnCpu(logits.clone(), VOCAB).tokens();
    Gpu.run(
        s -> {
          int[] gpu = onDevice(s, logits, VOCAB, b).out().tokens();
          assertThat(gpu).as("seed %d", r.seed()).containsExactly(cpu);
          for (int row = 0; row < n; row++) {
            assertThat(allows(masks[row], gpu[row])).as("row %d", row).isTrue();
          }
        });
  }

  @Test
  void maskedLogprobsAndAlternativesMatchTheHost() {
    Rand r = new Rand();
    int n = 6;
    float[] logits = gaussian(r, n * VOCAB, 3);
    SamplingBatch b = new SamplingBatch();
    for (int row = 0; row < n; row++) {
      b.addRow(row % 2 == 0 ? 0 : 0.8f, 0, 0.95f, 0, 31 + row, 2, 1, 0, 0, row == 5 ? 20 : 5);
      // Row 5 allows fewer tokens than it asks alternatives for: the rest are -inf.
      b.setAllowedTokens(randomMask(r.random(), VOCAB, row == 5 ? 0 : 0.05, row * 1000 + 7));
    }
    SampledTokens cpu = b.sampleOnCpu(logits.clone(), VOCAB);
    Gpu.run(
        s -> {
          SampledTokens gpu = onDevice(s, logits, VOCAB, b).out();
          for (int row = 0; row < n; row++) {
            if (gpu.tokens()[row] != cpu.tokens()[row]) {
              continue; // a sampled row on a rounding edge; the token test covers agreement
            }
            int top = b.topLogprobs()[row];
            assertThat(gpu.logprobs()[row]).isCloseTo(cpu.logprobs()[row], within(1e-4f));
            assertThat(gpu.topIds(row, top))
                .as("row %d", row)
                .containsExactly(cpu.topIds(row, top));
            float[] g = gpu.topLogprobs(row, top);
            float[] c = cpu.topLogprobs(row, top);
            for (int j = 0; j < top; j++) {
              if (Float.isInfinite(c[j])) {
                assertThat(g[j]).isEqualTo(c[j]);
              } else {
                assertThat(g[j]).as("row %d alternative %d", row, j).isCloseTo(c[j], within(1e-4f));
              }
            }
          }
          assertThat(gpu.tokens()[5])
              .as("row 5 allows only its forced token")
              .isEqualTo(5 * 1000 + 7);
          assertThat(agreement(gpu.tokens(), cpu.tokens())).isGreaterThanOrEqualTo(n - 1);
        });
  }

  @ParameterizedTest(name = "T={0} top_k={1} top_p={2} min_p={3} bias={4}")
  @CsvSource({
    "1.0,0,1.0,0,false",
    "0.7,0,1.0,0,false",
    "1.0,3,1.0,0,false",
    "1.0,0,0.8,0,false",
    "1.2,4,0.9,0.05,true"
  })
  void maskedDrawsFollowTheHostSamplersDistributionAndRepeatPerSeed(
      float t, int k, float p, float minP, boolean bias) {
    int vocab = LOGITS.length;
    long[] mask = {SMALL_MASK};
    SamplingBatch batch = new SamplingBatch();
    for (int r = 0; r < DRAWS; r++) {
      batch.addRow(t, k, p, minP, 4321, r, 1, 0, 0, -1);
      if (bias) {
        batch.addBias(8, 4f); // forbidden by the mask: must stay out
        batch.addBias(2, 1.5f);
      }
      batch.setAllowedTokens(mask);
    }
    float[] logits = new float[DRAWS * vocab];
    for (int r = 0; r < DRAWS; r++) {
      System.arraycopy(LOGITS, 0, logits, r * vocab, vocab);
    }
    int[] cpu = batch.sampleOnCpu(logits.clone(), vocab).tokens();
    Gpu.run(
        s -> {
          int[] gpu = onDevice(s, logits, vocab, batch).out().tokens();
          int[] counts = new int[vocab];
          for (int g : gpu) {
            counts[g]++;
          }
          double[] adj =
              SamplingDistribution.adjusted(
                  LOGITS,
                  bias ? new int[] {8, 2} : new int[0],
                  bias ? new float[] {4f, 1.5f} : new float[0],
                  new int[0],
                  new int[0],
                  1,
                  0,
                  0);
          for (int i = 0; i < vocab; i++) {
            if (!allows(mask, i)) {
              adj[i] = Double.NEGATIVE_INFINITY;
            }
          }
          double[] probs = SamplingDistribution.probabilities(adj, t, k, p, minP);
          assertThat(SamplingDistribution.misfit(counts, probs)).isNull();
          assertThat(agreement(gpu, cpu)).isGreaterThan(DRAWS * 999 / 1000);
          assertThat(onDevice(s, logits, vocab, batch).out().tokens())
              .as("the same seeds and steps draw the same tokens")
              .containsExactly(gpu);
        });
  }

  @Test
  void anAllowAllMaskEqualsNoMaskBitForBit() {
    Rand r = new Rand();
    int n = 24;
    float[] logits = gaussian(r, n * VOCAB, 2.5);
    long[] all = new long[(VOCAB + 63) / 64];
    Arrays.fill(all, -1L);
    SamplingBatch plain = new SamplingBatch();
    SamplingBatch masked = new SamplingBatch();
    for (SamplingBatch b : new SamplingBatch[] {plain, masked}) {
      for (int row = 0; row < n; row++) {
        int mode = row % 4;
        b.addRow(
            mode == 0 ? 0 : 0.8f,
            mode == 2 ? 40 : 0,
            mode == 3 ? 0.9f : 1f,
            mode == 1 ? 0.05f : 0,
            700 + row,
            row,
            mode == 2 ? 1.2f : 1f,
            mode == 2 ? 0.3f : 0,
            0,
            mode == 3 ? 4 : -1);
        if (mode == 2) {
          for (int t = 0; t < 30; t++) {
            b.addSeenToken(t * 1001 + row, t % 2);
          }
        }
        b.addBias(row * 5000, 2f);
        if (b == masked) {
          b.setAllowedTokens(all);
        }
      }
    }
    Gpu.run(
        s -> {
          Run a = onDevice(s, logits, VOCAB, plain);
          Run m = onDevice(s, logits, VOCAB, masked);
          assertThat(m.out().tokens()).containsExactly(a.out().tokens());
          assertThat(floatBits(m.out().logprobs())).containsExactly(floatBits(a.out().logprobs()));
          assertThat(m.out().topIds()).containsExactly(a.out().topIds());
          assertThat(floatBits(m.out().topLogprobs()))
              .containsExactly(floatBits(a.out().topLogprobs()));
          assertThat(floatBits(m.logitsAfter())).isEqualTo(floatBits(a.logitsAfter()));
        });
  }

  private static int[] floatBits(float[] v) {
    int[] bits = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      bits[i] = Float.floatToRawIntBits(v[i]);
    }
    return bits;
  }

  @Test
  void aMixedBatchLeavesItsPlainRowsUntouchedAndMasksTheOthersAsTheHost() {
    Rand r = new Rand();
    int n = 48;
    float[] logits = gaussian(r, n * VOCAB, 3);
    long[][] masks = new long[n][];
    SamplingBatch mixed = new SamplingBatch();
    SamplingBatch plain = new SamplingBatch();
    CompletableFuture<long[]> late = new CompletableFuture<>();
    for (int row = 0; row < n; row++) {
      float t = row % 3 == 0 ? 0 : 0.9f;
      mixed.addRow(t, 0, 0.95f, 0, 55 + row, 4, 1, 0, 0, -1);
      plain.addRow(t, 0, 0.95f, 0, 55 + row, 4, 1, 0, 0, -1);
      if (row % 2 == 1) {
        masks[row] = randomMask(r.random(), VOCAB, 0.003, r.nextInt(VOCAB));
        if (row == 7) {
          mixed.setAllowedTokens(late); // computed on a mask thread, completed below
        } else {
          mixed.setAllowedTokens(masks[row]);
        }
      }
    }
    long[] lateMask = masks[7];
    CompletableFuture.delayedExecutor(100, TimeUnit.MILLISECONDS)
        .execute(() -> late.complete(lateMask));
    Gpu.run(
        s -> {
          // The device upload is the first to read row 7's mask: it waits for the mask thread.
          int[] withMasks = onDevice(s, logits, VOCAB, mixed).out().tokens();
          int[] without = onDevice(s, logits, VOCAB, plain).out().tokens();
          int[] cpuMixed = mixed.sampleOnCpu(logits.clone(), VOCAB).tokens();
          int masked = 0;
          for (int row = 0; row < n; row++) {
            if (masks[row] == null) {
              assertThat(withMasks[row]).as("plain row %d", row).isEqualTo(without[row]);
            } else {
              masked++;
              assertThat(allows(masks[row], withMasks[row])).as("masked row %d", row).isTrue();
              if (row % 3 == 0) {
                assertThat(withMasks[row]).as("greedy row %d", row).isEqualTo(cpuMixed[row]);
              }
            }
          }
          assertThat(masked).isEqualTo(n / 2);
          assertThat(agreement(withMasks, cpuMixed))
              .as("seed %d", r.seed())
              .isGreaterThanOrEqualTo(n - 2);
        });
  }

  @Test
  void aMaskThatAllowsNothingIsRefusedAsOnTheHost() {
    int vocab = 1000;
    float[] logits = new float[3 * vocab];
    SamplingBatch b = new SamplingBatch();
    for (int row = 0; row < 3; row++) {
      b.addRow(row == 1 ? 0 : 1f, 0, 1, 0, 1, 0, 1, 0, 0, -1);
      b.setAllowedTokens(row == 1 ? new long[(vocab + 63) / 64] : new long[] {1L << row});
    }
    // Bits past the vocabulary do not count as allowed tokens.
    SamplingBatch past = new SamplingBatch();
    past.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, -1);
    long[] beyond = new long[(vocab + 63) / 64 + 1];
    beyond[beyond.length - 1] = -1L;
    beyond[beyond.length - 2] = -1L << (vocab % 64);
    past.setAllowedTokens(beyond);
    assertThatThrownBy(() -> b.sampleOnCpu(logits.clone(), vocab))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("row 1: its allowed-token mask allows no token");
    Gpu.run(
        s -> {
          assertThatThrownBy(() -> onDevice(s, logits, vocab, b))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessage("row 1: its allowed-token mask allows no token");
          assertThatThrownBy(() -> onDevice(s, logits, vocab, past))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessage("row 0: its allowed-token mask allows no token");
          SamplingBatch ok = new SamplingBatch();
          ok.addRow(0, 0, 1, 0, 1, 0, 1, 0, 0, -1);
          ok.setAllowedTokens(new long[] {1L << 9});
          assertThat(onDevice(s, logits, vocab, ok).out().tokens()).containsExactly(9);
        });
  }

  @Test
  void aCapturedGraphReplaysWithNewMasksEachTime() {
    Rand r = new Rand();
    int n = 16;
    float[] logits = gaussian(r, n * VOCAB, 2.5);
    Gpu.run(
        s -> {
          DeviceBuffer d = s.alloc(4L * logits.length);
          try (SamplingBuffers buf =
              new SamplingBuffers(new SamplingCapacity(n, 16, 16, 4, VOCAB))) {
            DeviceSampler sampler = Gpu.kernels().deviceSampler();
            SamplingBatch first = new SamplingBatch();
            for (int i = 0; i < n; i++) {
              first.addRow(1, 0, 1, 0, 1, i, 1, 0, 0, -1);
            }
            d.upload(s.stream(), logits);
            buf.upload(first, n, s.stream());
            s.stream().synchronize();
            try (CudaGraph graph =
                s.stream().capture(() -> sampler.launch(s.stream(), d.ptr(), n, VOCAB, buf))) {
              for (int v = 0; v < 4; v++) {
                SamplingBatch b = new SamplingBatch();
                long[][] masks = new long[n][];
                for (int i = 0; i < n - v; i++) {
                  b.addRow(v % 2 == 0 ? 0 : 0.8f, 0, 0.95f, 0, 90 + v, i, 1, 0, 0, -1);
                  if ((i + v) % 3 != 0) {
                    masks[i] = randomMask(r.random(), VOCAB, 0.01 * (v + 1), i * 77);
                    b.setAllowedTokens(masks[i]);
                  }
                }
                int[] cpu = b.sampleOnCpu(logits.clone(), VOCAB).tokens();
                d.upload(s.stream(), logits);
                buf.upload(b, n, s.stream());
                graph.launch(s.stream());
                int[] gpu = buf.download(s.stream(), b.rows()).tokens();
                for (int i = 0; i < b.rows(); i++) {
                  if (masks[i] != null) {
                    assertThat(allows(masks[i], gpu[i])).as("replay %d row %d", v, i).isTrue();
                  }
                }
                assertThat(agreement(gpu, cpu))
                    .as("replay %d, seed %d", v, r.seed())
                    .isGreaterThanOrEqualTo(b.rows() - (v % 2 == 0 ? 0 : 1));
              }
            }
          }
        });
  }
}
