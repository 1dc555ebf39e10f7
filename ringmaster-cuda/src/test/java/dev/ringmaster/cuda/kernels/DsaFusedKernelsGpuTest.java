package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.runtime.KernelTuning;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The indexer's fused launches against the separate kernels they replace, bit for bit: {@link
 * DsaKernels#indexerQkFused} against LayerNorm, two ropes, the key's append (bf16) or quantization
 * (FP8) and the query heads' quantization; {@link DsaLaunchShapes#topKCandidates} against {@link
 * DsaKernels#topKMulti} and the one-block {@link DsaKernels#topK} (all must agree exactly, and with
 * the CPU's rule), the candidate form with both first-pass bins ({@link
 * DsaKernels#useTopKHalfBins}) and both ordered writes ({@link DsaKernels#useTopKWideWrite}), on
 * score rows built to stress the selection: distinct scores, few distinct values (ties everywhere),
 * one value for a whole row (every key in the threshold bin: the candidate list overflows and the
 * row is read instead), signed zeros, and rows at, below and just above {@code topK}; for the half
 * bins also scores crowded into a few half bins (distinct low bits: the refinement's three radix
 * passes, the list and the whole-row fallback), scores at the edges of the half range (past 65504,
 * half subnormals, tiny values of either sign, float subnormals), infinities of either sign and NaN
 * (it ranks above +inf, as the CPU's {@code Float.compare}).
 */
@Tag("gpu")
class DsaFusedKernelsGpuTest {
  @ParameterizedTest
  @CsvSource({
    // heads, dim, rope dims, tokens, interleaved, fp8 keys, quantized query
    "32,128,64,1,true,false,false",
    "32,128,64,7,true,false,false",
    "32,128,64,5,false,false,false",
    "32,128,64,3,true,true,false",
    "32,128,64,9,true,true,true",
    "64,128,64,2,true,true,true",
    "4,16,8,33,true,false,false",
    "5,16,6,4,false,true,true"
  })
  void fusedKeyAndQueryStepsEqualTheSeparateKernels(
      int heads, int dim, int ropeDim, int tokens, boolean interleaved, boolean fp8, boolean qq) {
    Rand r = new Rand();
    SplittableRandom random = r.random();
    float[] q = r.uniform(tokens * heads * dim, 2f);
    float[] k = r.uniform(tokens * dim, 3f);
    for (int d = 0; d < dim; d++) {
      k[d] = 0.5f; // a constant row: LayerNorm's variance is 0 there, eps alone keeps it finite
    }
    float[] gamma = r.uniform(dim, 1f);
    float[] beta = r.uniform(dim, 0.2f);
    float[] invFreq = new float[ropeDim / 2];
    for (int i = 0; i < invFreq.length; i++) {
      invFreq[i] = (float) Math.pow(10000, -2.0 * i / ropeDim);
    }
    int slotsTotal = tokens + 5;
    int[] slots = new int[tokens];
    int[] positions = new int[tokens];
    int[] order = random.ints(0, slotsTotal).distinct().limit(tokens).toArray();
    for (int t = 0; t < tokens; t++) {
      slots[t] = order[t];
      positions[t] = random.nextInt(200_000);
    }
    float eps = 1e-6f;
    float scaling = 1.25f;
    int cacheBytes = fp8 ? slotsTotal * dim : 2 * slotsTotal * dim;
    Object[][] got = new Object[2][];
    Gpu.run(
        s -> {
          DsaKernels dsa = Gpu.kernels().dsa();
          DeviceBuffer gammaPtr = s.f32(gamma);
          DeviceBuffer betaPtr = s.f32(beta);
          DeviceBuffer freqPtr = s.f32(invFreq);
          DeviceBuffer slotPtr = s.i32(slots);
          DeviceBuffer posPtr = s.i32(positions);
          for (int v = 0; v < 2; v++) {
            DeviceBuffer qPtr = s.f32(q);
            DeviceBuffer kPtr = s.f32(k);
            DeviceBuffer cache = s.u8(new byte[cacheBytes]);
            DeviceBuffer kScales = s.f32(new float[slotsTotal]);
            DeviceBuffer qScales = s.f32(new float[tokens * heads]);
            long keyScales = fp8 ? kScales.ptr() : 0;
            if (v == 0) {
              dsa.layerNorm(
                  s.stream(), kPtr.ptr(), gammaPtr.ptr(), betaPtr.ptr(), tokens, dim, eps);
              var kn = Gpu.kernels();
              kn.rope(
                  s.stream(),
                  qPtr.ptr(),
                  heads * dim,
                  dim,
                  0,
                  posPtr.ptr(),
                  freqPtr.ptr(),
                  tokens,
                  heads,
                  ropeDim,
                  scaling,
                  interleaved);
              kn.rope(
                  s.stream(),
                  kPtr.ptr(),
                  dim,
                  0,
                  0,
                  posPtr.ptr(),
                  freqPtr.ptr(),
                  tokens,
                  1,
                  ropeDim,
                  scaling,
                  interleaved);
              if (fp8) {
                dsa.quantizeFp8(
                    s.stream(), cache.ptr(), keyScales, 0, kPtr.ptr(), slotPtr.ptr(), tokens, dim);
              } else {
                kn.mla()
                    .mlaCacheAppend(
                        s.stream(), cache.ptr(), kPtr.ptr(), dim, slotPtr.ptr(), tokens, dim);
              }
              if (qq) {
                dsa.quantizeFp8(
                    s.stream(), 0, qScales.ptr(), qPtr.ptr(), qPtr.ptr(), 0, tokens * heads, dim);
              }
            } else {
              dsa.indexerQkFused(
                  s.stream(),
                  qPtr.ptr(),
                  kPtr.ptr(),
                  gammaPtr.ptr(),
                  betaPtr.ptr(),
                  eps,
                  tokens,
                  heads,
                  dim,
                  ropeDim,
                  posPtr.ptr(),
                  freqPtr.ptr(),
                  scaling,
                  interleaved,
                  cache.ptr(),
                  keyScales,
                  slotPtr.ptr(),
                  qq ? qScales.ptr() : 0);
            }
            got[v] =
                new Object[] {
                  s.read(qPtr, tokens * heads * dim),
                  s.read(kPtr, tokens * dim),
                  s.readBytes(cache, cacheBytes),
                  s.read(kScales, slotsTotal),
                  s.read(qScales, tokens * heads)
                };
          }
        });
    String[] parts = {"query heads", "key", "key cache", "key scales", "query scales"};
    for (int i = 0; i < parts.length; i++) {
      String what = parts[i] + " (seed " + r.seed() + ")";
      if (got[0][i] instanceof float[] a) {
        assertThat(bits((float[]) got[1][i])).as(what).containsExactly(bits(a));
      } else {
        assertThat((byte[]) got[1][i]).as(what).containsExactly((byte[]) got[0][i]);
      }
    }
    assertThat(bits((float[]) got[1][1])).as("the key was normalised").isNotEqualTo(bits(k));
  }

  private static int[] bits(float[] v) {
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = Float.floatToRawIntBits(v[i]);
    }
    return b;
  }

  @ParameterizedTest
  @CsvSource({
    // kind of scores, topK, row lengths (;-separated), chunks
    "distinct,2048,131072;2048;2049;70000,32",
    "distinct,2048,202752,50",
    "few,2048,131072;5000;4097,32",
    "few,16,20000;17;16,8",
    "constant,2048,40000;3000,16",
    "zeros,64,9000;65,4",
    "normal,2048,131072,64",
    "normal,2048,8192,2",
    "crowded,2048,40000;131072;2049,16",
    "crowded,100,131072;7000,4",
    "crowded,2048,202752,8",
    "halfedges,2048,131072;9000,32",
    "halfedges,300,50000,5",
    "specials,2048,60000;2100,8",
    "specials,16,4000;17,1",
    "tiny,1024,100000,16"
  })
  void candidateTopKEqualsTheSixPassAndOneBlockForms(
      String kind, int topK, String lengths, int chunks) {
    Rand r = new Rand();
    SplittableRandom random = r.random();
    int[] lens = Arrays.stream(lengths.split(";")).mapToInt(Integer::parseInt).toArray();
    int rows = lens.length;
    int ld = (Arrays.stream(lens).max().orElseThrow() + 3) & ~3;
    float[] scores = new float[rows * ld];
    for (int i = 0; i < rows; i++) {
      for (int p = 0; p < lens[i]; p++) {
        scores[i * ld + p] = score(kind, random);
      }
    }
    int[] pos = new int[rows];
    for (int i = 0; i < rows; i++) {
      pos[i] = lens[i] - 1;
    }
    // [0] one-block, [1] six-pass, [2..5] candidate: bins f32 / half, write one / four a thread.
    String[] candidateForms = {
      "f32 bins", "half bins", "f32 bins, wide write", "half bins, wide write"
    };
    int[][] got = new int[2 + candidateForms.length][];
    Gpu.run(
        s -> {
          DsaKernels dsa = Gpu.kernels().dsa();
          DeviceBuffer scorePtr = s.f32(scores);
          DeviceBuffer posPtr = s.i32(pos);
          DeviceBuffer state = s.alloc(DsaLaunchShapes.topKStateBytes(rows, chunks));
          for (int v = 0; v < got.length; v++) {
            DeviceBuffer sel = s.poisoned((long) rows * topK);
            dsa.useTopKHalfBins(v == 3 || v == 5);
            dsa.useTopKWideWrite(v >= 4);
            switch (v) {
              case 0 ->
                  dsa.topK(s.stream(), sel.ptr(), topK, scorePtr.ptr(), ld, posPtr.ptr(), 0, rows);
              case 1 ->
                  dsa.topKMulti(
                      s.stream(),
                      sel.ptr(),
                      topK,
                      scorePtr.ptr(),
                      ld,
                      posPtr.ptr(),
                      0,
                      rows,
                      state.ptr(),
                      chunks);
              default -> {
                state.poison(s.stream()); // it must zero what it relies on itself
                dsa.topKCandidates(
                    s.stream(),
                    sel.ptr(),
                    topK,
                    scorePtr.ptr(),
                    ld,
                    posPtr.ptr(),
                    0,
                    rows,
                    state.ptr(),
                    chunks);
              }
            }
            got[v] = s.readInts(sel, rows * topK);
          }
          dsa.useTopKHalfBins(KernelTuning.defaults().indexerTopkHalfBins());
          dsa.useTopKWideWrite(KernelTuning.defaults().indexerTopkWideWrite());
        });
    for (int i = 0; i < rows; i++) {
      String what =
          String.format(
              "%s scores, row %d (context %d, topK %d, %d chunks, seed %d)",
              kind, i, lens[i], topK, chunks, r.seed());
      int[] one = Arrays.copyOfRange(got[0], i * topK, (i + 1) * topK);
      int[] six = Arrays.copyOfRange(got[1], i * topK, (i + 1) * topK);
      assertThat(one)
          .as("one-block top-k, " + what)
          .containsExactly(reference(scores, i * ld, lens[i], topK));
      assertThat(six).as("six-pass top-k, " + what).containsExactly(one);
      for (int v = 2; v < got.length; v++) {
        assertThat(Arrays.copyOfRange(got[v], i * topK, (i + 1) * topK))
            .as("candidate top-k, " + candidateForms[v - 2] + ", " + what)
            .containsExactly(one);
      }
    }
  }

  private static float score(String kind, SplittableRandom random) {
    return switch (kind) {
      case "distinct" -> (float) (random.nextDouble() * 8 - 2);
      case "few" -> (random.nextInt(7) - 3) * 0.25f;
      case "constant" -> 0.75f;
      case "zeros" -> random.nextInt(4) == 0 ? 1f : (random.nextBoolean() ? 0f : -0f);
      // [1, 1.125): 8 half bins of distinct floats (with some repeats), the last rounding up.
      case "crowded" ->
          random.nextInt(5) == 0
              ? 1.0625f
              : Float.intBitsToFloat(Float.floatToRawIntBits(1f) + random.nextInt(1 << 20));
      case "halfedges" -> halfEdge(random);
      case "specials" -> special(random);
      // Half subnormals and float subnormals of either sign around zero.
      case "tiny" ->
          (float) (random.nextGaussian() * (random.nextBoolean() ? 1e-6 : 1e-40))
              * (random.nextInt(8) == 0 ? 0f : 1f);
      default -> (float) (random.nextGaussian() * 0.3);
    };
  }

  /** A score at or next to an edge of the half range or of a half rounding step, either sign. */
  private static float halfEdge(SplittableRandom random) {
    float[] edges = {
      65504f,
      65519.99f,
      65520f,
      1e6f,
      Float.MAX_VALUE,
      6.1035156e-5f,
      6.0975552e-5f,
      5.9604645e-8f,
      2.9802322e-8f,
      1e-9f,
      1.4e-45f,
      1f + 1f / 2048,
      1f + 3f / 2048,
      2f - 1f / 4096,
      0f,
      1f
    };
    float e = edges[random.nextInt(edges.length)];
    int ulps = random.nextInt(7) - 3;
    float v = e == 0f ? e : Float.intBitsToFloat(Float.floatToRawIntBits(e) + ulps);
    if (Float.isNaN(v)) {
      v = e; // past +inf or below the smallest subnormal: the edge itself
    }
    return random.nextBoolean() ? v : -v;
  }

  /**
   * A normal score, or one of +-inf, NaN, +-0 and +-Float.MAX_VALUE. The NaN is the positive quiet
   * one, the bits every NaN score has after the kernels' canonicalising add.
   */
  private static float special(SplittableRandom random) {
    return switch (random.nextInt(10)) {
      case 0 -> random.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
      case 1 -> Float.NaN;
      case 2 -> random.nextBoolean() ? 0f : -0f;
      case 3 -> random.nextBoolean() ? Float.MAX_VALUE : -Float.MAX_VALUE;
      default -> (float) (random.nextGaussian() * 100);
    };
  }

  /** The CPU's rule: the topK highest (+0 = -0), ties to the earlier position, ascending; -1 on. */
  private static int[] reference(float[] scores, int off, int len, int topK) {
    int[] out = new int[topK];
    Arrays.fill(out, -1);
    if (len <= topK) {
      for (int p = 0; p < len; p++) {
        out[p] = p;
      }
      return out;
    }
    Integer[] order = new Integer[len];
    Arrays.setAll(order, p -> p);
    Arrays.sort(
        order,
        (a, b) -> {
          int c = Float.compare(scores[off + b] + 0f, scores[off + a] + 0f);
          return c != 0 ? c : Integer.compare(a, b);
        });
    for (int j = 0; j < topK; j++) {
      out[j] = order[j];
    }
    Arrays.sort(out);
    return out;
  }
}
