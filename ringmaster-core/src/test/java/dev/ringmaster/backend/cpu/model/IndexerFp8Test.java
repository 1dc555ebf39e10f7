package dev.ringmaster.backend.cpu.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.quant.Fp8E4m3;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.config.IndexerCacheDtype;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.IndexerKeyCache;
import dev.ringmaster.runtime.KernelTuning;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * FP8 indexer keys on the CPU ({@code --indexer-cache-dtype fp8_e4m3}): the stored codes and scales
 * against a hand computation, indexer scores against those over f32 keys, selections where the
 * scores are well separated, and the DSA fixtures' greedy tokens.
 */
class IndexerFp8Test {
  /** A tiny DSA model config whose indexer has {@code heads} heads of {@code dim} values. */
  private static ModelConfig config(int heads, int dim, IndexerCacheDtype keys) {
    String json =
        "{\"model_type\": \"deepseek_v32\", \"vocab_size\": 100, \"hidden_size\": 64,"
            + " \"intermediate_size\": 96, \"moe_intermediate_size\": 16, \"num_hidden_layers\": 2,"
            + " \"num_attention_heads\": 4, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,"
            + " \"kv_lora_rank\": 16, \"q_lora_rank\": 24, \"qk_rope_head_dim\": 8,"
            + " \"qk_nope_head_dim\": 8, \"v_head_dim\": 8, \"index_topk\": 8,"
            + " \"index_n_heads\": "
            + heads
            + ", \"index_head_dim\": "
            + dim
            + "}";
    return ModelConfigParser.parseString(json, "t").withIndexerCache(keys);
  }

  /** Stores {@code keys} ({@code [n, dim]}) at positions 0 .. n-1 of layer 0 of a new cache. */
  private static KvCache cacheOf(ModelConfig cfg, float[] keys, int n) {
    KvCache cache = new KvCache(cfg);
    int[] pos = new int[n];
    Arrays.setAll(pos, p -> p);
    KvCache.storeIndexerKeys(
        new BatchLayout(new int[] {0, n}, pos), new KvCache[] {cache}, 0, keys);
    return cache;
  }

  @Test
  void storedCodesAndScalesAreTheHandComputedOnes() {
    ModelConfig cfg = config(4, 16, IndexerCacheDtype.FP8_E4M3);
    float[] keys = new float[3 * 16];
    // Key 0: amax 448, so s = 1 and the codes are the values rounded to e4m3.
    float[] k0 = {448f, 184f, 1f, -0f, 3e-3f, 0f, 176f, -200f, 0.0625f, -17f};
    System.arraycopy(k0, 0, keys, 0, k0.length);
    // Key 1: amax 2.5, s = 2.5/448: 1/s = 179.2 -> 176, 0.3/s = 53.76 -> 52, -2.5/s = -448.
    keys[16] = 1f;
    keys[17] = -2.5f;
    keys[18] = 0.3f;
    // Key 2: all zeros, scale 1.
    KvCache cache = cacheOf(cfg, keys, 3);
    IndexerKeyCache stored = cache.indexerKeys();
    assertThat(stored.fp8()).isTrue();
    byte[] codes = stored.codes(0);
    float[] scales = stored.scales(0);
    assertThat(scales[0]).isEqualTo(1f);
    assertThat(scales[1]).isEqualTo(2.5f / 448f);
    assertThat(scales[2]).isEqualTo(1f);
    // 448 = 1.75 * 2^8 (exponent field 15, mantissa 6); 184 is the tie between 176 (mantissa 3)
    // and 192 (mantissa 4): even, 192; 1 = 2^0 (field 7); -0 keeps its sign; 3e-3 is subnormal,
    // 1.536 steps of 2^-9 -> 2; 176 = 1.375 * 2^7 (field 14, mantissa 3); -200 ties 192 / 208:
    // even, -192; 0.0625 = 2^-4 (field 3); -17 ties 16 (mantissa 0) and 18 (mantissa 1): -16 (field
    // 11).
    int[] want0 = {0x7e, 0x74, 0x38, 0x80, 0x02, 0x00, 0x73, 0xf4, 0x18, 0xd8, 0, 0, 0, 0, 0, 0};
    int[] want1 = {0x73, 0xfe, 0x65, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int d = 0; d < 16; d++) {
      assertThat(codes[d] & 0xff).as("key 0 dim %d", d).isEqualTo(want0[d]);
      assertThat(codes[16 + d] & 0xff).as("key 1 dim %d", d).isEqualTo(want1[d]);
      assertThat(codes[32 + d] & 0xff).as("key 2 dim %d", d).isZero();
    }
    // Dequantized: the code's exact value times the scale.
    assertThat(Fp8E4m3.decode(codes[1])).isEqualTo(192f);
    assertThat(Fp8E4m3.decode(codes[4])).isEqualTo(0x1p-8f);
    assertThat(Fp8E4m3.decode(codes[16]) * scales[1]).isEqualTo(176f * (2.5f / 448f));
    assertThat(Fp8E4m3.decode(codes[18]) * scales[1]).isEqualTo(52f * (2.5f / 448f));
    assertThat(Fp8E4m3.decode(codes[17]) * scales[1]).isEqualTo(-448f * (2.5f / 448f));
  }

  /** Gaussian values: LayerNorm outputs, projections. */
  private static float[] gaussian(Random r, int n) {
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = (float) r.nextGaussian();
    }
    return x;
  }

  private static float rms(float[] x) {
    double s = 0;
    for (float v : x) {
      s += (double) v * v;
    }
    return (float) Math.sqrt(s / x.length);
  }

  @ParameterizedTest(name = "{0} heads x {1}")
  @CsvSource({"8,16", "32,128", "64,128"})
  void scoresOverFp8KeysStayCloseToThoseOverF32Keys(int heads, int dim) {
    Random r = new Random(21);
    int len = 1024;
    int queries = 8;
    ModelConfig f32 = config(heads, dim, IndexerCacheDtype.AUTO);
    ModelConfig fp8 = config(heads, dim, IndexerCacheDtype.FP8_E4M3);
    float[] keys = gaussian(r, len * dim);
    KvCache exact = cacheOf(f32, keys, len);
    KvCache quantized = cacheOf(fp8, keys, len);
    CpuIndexer a = new CpuIndexer(CpuKernelContext.shared(), f32);
    CpuIndexer b = new CpuIndexer(CpuKernelContext.shared(), fp8);
    float worst = 0;
    double sq = 0;
    int overlap = 0;
    for (int i = 0; i < queries; i++) {
      float[] q = gaussian(r, heads * dim);
      float[] w = gaussian(r, heads);
      float[] want = a.score(q.clone(), w, 0, exact, 0, len);
      float[] got = b.score(q.clone(), w, 0, quantized, 0, len);
      float scale = rms(want);
      int k = len / 8;
      java.util.Set<Integer> same = new java.util.HashSet<>();
      for (int x : CpuIndexer.topK(want, k)) {
        same.add(x);
      }
      for (int x : CpuIndexer.topK(got, k)) {
        overlap += same.contains(x) ? 1 : 0;
      }
      for (int p = 0; p < len; p++) {
        float e = Math.abs(got[p] - want[p]) / scale;
        worst = Math.max(worst, e);
        sq += (double) e * e;
      }
    }
    double rmsErr = Math.sqrt(sq / (queries * len));
    double kept = overlap / (double) (queries * (len / 8));
    System.out.printf(
        "%d x %d: |fp8 - f32| score: rms %.4f, worst %.4f (x the row's rms); top %d of %d:"
            + " %.3f of the positions the same%n",
        heads, dim, rmsErr, worst, len / 8, len, kept);
    // e4m3 keeps 3 mantissa bits: about 2.5% rms error per value, on the query and the key.
    assertThat(rmsErr).isLessThan(0.05);
    assertThat(worst).isLessThan(0.35f);
    assertThat(kept).isGreaterThan(0.95);
  }

  @Test
  void theCpuKvBudgetCountsCodesAndOneScalePerIndexedLayer() {
    var dir = dev.ringmaster.testing.RepoPaths.require("fixtures/golden/deepseek_v32_dsa");
    KernelTuning fp8 = KernelTuning.defaults().with("indexer-cache-dtype", "fp8_e4m3");
    try (CausalLm exact = CausalLm.load(dir);
        CausalLm model = CausalLm.load(dir, fp8)) {
      // Two layers of f32 latent (16) and rotary key (8) rows, both layers indexed with 16-value
      // keys: 64 bytes of f32 or 16 codes plus a 4-byte scale.
      assertThat(exact.kvBytesPerToken()).isEqualTo(4L * 2 * (16 + 8) + 2L * 4 * 16);
      assertThat(model.kvBytesPerToken()).isEqualTo(4L * 2 * (16 + 8) + 2L * (16 + 4));
    }
  }

  @Test
  void wellSeparatedScoresSelectTheSamePositions() {
    int heads = 32;
    int dim = 128;
    int len = 600;
    int topK = 64;
    Random r = new Random(7);
    // Every query head points along u; a key is a_p * u plus noise orthogonal enough to matter
    // little. The top-k positions get a_p in [0.6, 1], the others in [-1, 0.3]: the scores of the
    // two groups are far apart compared with FP8's few percent, their order within a group is not.
    float[] u = gaussian(r, dim);
    float[] keys = new float[len * dim];
    List<Integer> order = new java.util.ArrayList<>();
    for (int p = 0; p < len; p++) {
      order.add(p);
    }
    java.util.Collections.shuffle(order, r);
    java.util.Set<Integer> best = new java.util.TreeSet<>(order.subList(0, topK));
    for (int p = 0; p < len; p++) {
      float a = best.contains(p) ? 0.6f + 0.4f * r.nextFloat() : -1f + 1.3f * r.nextFloat();
      for (int d = 0; d < dim; d++) {
        keys[p * dim + d] = a * u[d] + 0.05f * (float) r.nextGaussian();
      }
    }
    float[] q = new float[heads * dim];
    for (int h = 0; h < heads; h++) {
      for (int d = 0; d < dim; d++) {
        q[h * dim + d] = u[d] * (0.5f + r.nextFloat());
      }
    }
    float[] w = new float[heads];
    for (int h = 0; h < heads; h++) {
      w[h] = 0.1f + r.nextFloat();
    }
    int[] want = best.stream().mapToInt(Integer::intValue).toArray();
    for (IndexerCacheDtype dtype : IndexerCacheDtype.values()) {
      ModelConfig cfg = config(heads, dim, dtype);
      float[] scores =
          new CpuIndexer(CpuKernelContext.shared(), cfg)
              .score(q.clone(), w, 0, cacheOf(cfg, keys, len), 0, len);
      assertThat(CpuIndexer.topK(scores, topK)).as(dtype.cliName()).containsExactly(want);
    }
  }

  static List<GoldenFixture> dsaFixtures() {
    return SparseAttentionTest.dsaFixtures();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dsaFixtures")
  void theDsaFixturesWithFp8Keys(GoldenFixture f) {
    KernelTuning fp8 = KernelTuning.defaults().with("indexer-cache-dtype", "fp8_e4m3");
    try (CausalLm exact = CausalLm.load(f.dir());
        CausalLm model = CausalLm.load(f.dir(), fp8)) {
      assertThat(model.config().sparseAttention().fp8Keys()).isTrue();
      assertThat(model.newCache().indexerKeys().fp8()).isTrue();
      int vocab = model.config().vocabSize();
      int topK = model.config().sparseAttention().topK();
      int[] prompt = f.promptIds();
      float[] want = exact.forwardAll(prompt, exact.newCache());
      KvCache cache = model.newCache();
      float[] got = model.forwardAll(prompt, cache);
      // Contexts up to index_topk attend to every position: the indexer is not consulted.
      assertThat(Arrays.copyOf(got, topK * vocab))
          .as("contexts up to index_topk, bit for bit")
          .containsExactly(Arrays.copyOf(want, topK * vocab));
      // Decoding from the FP8 cache gives what a full prefill computes.
      KvCache half = model.newCache();
      int split = prompt.length / 2;
      model.forwardAll(Arrays.copyOf(prompt, split), half);
      for (int i = split; i < prompt.length; i++) {
        float[] step = model.forwardAll(new int[] {prompt[i]}, half);
        for (int j = 0; j < vocab; j++) {
          assertThat(step[j])
              .as("position %d token %d", i, j)
              .isCloseTo(got[i * vocab + j], org.assertj.core.data.Offset.offset(1e-4f));
        }
      }
      // Greedy from the prompt, and teacher forced along the f32 cache's tokens.
      int[] ref = f.greedyIds();
      int[] out = new int[ref.length];
      int agree = 0;
      KvCache forced = model.newCache();
      float[] fl = model.forwardAll(prompt, forced);
      int next = CpuOps.argmax(got, (prompt.length - 1) * vocab, vocab);
      int forcedNext = CpuOps.argmax(fl, (prompt.length - 1) * vocab, vocab);
      for (int i = 0; i < out.length; i++) {
        out[i] = next;
        agree += forcedNext == ref[i] ? 1 : 0;
        got = model.forwardAll(new int[] {next}, cache);
        next = CpuOps.argmax(got, 0, vocab);
        fl = model.forwardAll(new int[] {ref[i]}, forced);
        forcedNext = CpuOps.argmax(fl, 0, vocab);
      }
      int leading = 0;
      while (leading < out.length && out[leading] == ref[leading]) {
        leading++;
      }
      System.out.printf(
          "%s with FP8 indexer keys: greedy %s; f32 keys %s: the first %d equal; teacher forced"
              + " along the f32 tokens, %d/%d argmaxes equal%n",
          f.name(), Arrays.toString(out), Arrays.toString(ref), leading, agree, ref.length);
      assertThat(out[0]).as("the first token").isEqualTo(ref[0]);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dsaFixtures")
  void tensorParallelRanksCacheTheSameFp8Keys(GoldenFixture f) {
    KernelTuning fp8 = KernelTuning.defaults().with("indexer-cache-dtype", "fp8_e4m3");
    try (CausalLm single = CausalLm.load(f.dir(), fp8);
        ParallelCausalLm par =
            ParallelCausalLm.load(
                f.dir(), ParallelConfig.tensor(2), AllReduceAlgorithm.RING, fp8)) {
      assertThat(par.kvBytesPerToken()).isEqualTo(2 * single.kvBytesPerToken());
      int[] prompt = f.promptIds();
      KvCache c1 = single.newCache();
      KvCache cp = par.newCache();
      float[] a = single.forwardAll(prompt, c1);
      float[] b = par.forwardAll(prompt, cp);
      float diff = 0;
      for (int i = 0; i < a.length; i++) {
        diff = Math.max(diff, Math.abs(a[i] - b[i]));
      }
      System.out.printf("%s tp2 FP8 keys: max |logit diff| vs one rank %.2e%n", f.name(), diff);
      assertThat(diff).as("the allreduce's summation order only").isLessThanOrEqualTo(1e-4f);
      var dsa = single.config().sparseAttention();
      int n = prompt.length;
      int dim = dsa.indexHeadDim();
      for (int l = 0; l < single.config().numLayers(); l++) {
        if (!dsa.hasIndexer(l)) {
          continue;
        }
        IndexerKeyCache rank0 = cp.shard(0).indexerKeys();
        IndexerKeyCache rank1 = cp.shard(1).indexerKeys();
        assertThat(rank0.fp8()).isTrue();
        assertThat(Arrays.copyOf(rank1.codes(l), n * dim))
            .as("layer %d codes", l)
            .containsExactly(Arrays.copyOf(rank0.codes(l), n * dim));
        assertThat(Arrays.copyOf(rank1.scales(l), n))
            .as("layer %d scales", l)
            .containsExactly(Arrays.copyOf(rank0.scales(l), n));
      }
    }
  }
}
