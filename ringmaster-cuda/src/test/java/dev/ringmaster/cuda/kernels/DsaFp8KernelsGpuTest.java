package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.quant.Fp8E4m3;
import dev.ringmaster.backend.quant.Quantizers;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FP8 indexer-key kernels ({@code dsa_indexer_fp8.cu}) against the CPU's rule on random paged
 * caches (blocks in shuffled order): the quantization of keys on append and of query heads gives
 * the CPU's codes and scales bit for bit ({@code Quantizers.fp8Vector}; zero keys and repeated keys
 * included); the scores, on CUDA and on tensor cores, are the CPU formula {@code ks[p] * sum_h
 * (w[h] * headScale * qs[h] * scale) * relu(qc[h] . kc[p])} over those codes within 1e-5 (the code
 * products are exact in both forms, only the f32 summation order differs); the selections are the
 * CPU's rule on the GPU's scores, exactly; and the prefill path's gather (codes widened to bf16,
 * exactly, with their scales) and reduction of GEMM dot products, within 1e-5.
 */
@Tag("gpu")
class DsaFp8KernelsGpuTest {
  /**
   * A random paged layout: sequence {@code s}'s position {@code p} lives in cache slot slot[s][p].
   */
  private record Paged(int[] table, int maxBlocks, int[][] slot, int poolBlocks) {}

  private static Paged paged(Rand r, int[] lens, int blockSize) {
    int maxBlocks = 0;
    int totalBlocks = 0;
    for (int len : lens) {
      maxBlocks = Math.max(maxBlocks, (len + blockSize - 1) / blockSize);
      totalBlocks += (len + blockSize - 1) / blockSize;
    }
    int pool = totalBlocks + 2;
    List<Integer> free = new ArrayList<>();
    for (int b = 0; b < pool; b++) {
      free.add(b);
    }
    Collections.shuffle(free, new java.util.Random(r.seed()));
    int[] table = new int[lens.length * maxBlocks];
    int[][] slot = new int[lens.length][];
    int next = 0;
    for (int s = 0; s < lens.length; s++) {
      for (int b = 0; b < (lens[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
      slot[s] = new int[lens[s]];
      for (int p = 0; p < lens[s]; p++) {
        slot[s][p] = table[s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
      }
    }
    return new Paged(table, maxBlocks, slot, pool);
  }

  /** Host quantization of {@code rows} rows of {@code dim}: codes, scales and decoded values. */
  private record Quantized(byte[] codes, float[] scales, float[] values) {}

  private static Quantized quantize(float[] x, int rows, int dim) {
    byte[] codes = new byte[rows * dim];
    float[] scales = new float[rows];
    float[] values = new float[rows * dim];
    for (int i = 0; i < rows; i++) {
      scales[i] = Quantizers.fp8Vector(x, i * dim, dim, codes, i * dim);
      for (int d = 0; d < dim; d++) {
        values[i * dim + d] = Fp8E4m3.decode(codes[i * dim + d]);
      }
    }
    return new Quantized(codes, scales, values);
  }

  /** The CPU formula over code values: query row {@code i} against keys {@code 0 .. len-1}. */
  private static float[] reference(
      Quantized q,
      float[] w,
      float[] keyValues,
      float[] keyScales,
      int i,
      int len,
      int heads,
      int dim,
      float scale,
      float headScale) {
    float[] wq = new float[heads];
    for (int h = 0; h < heads; h++) {
      wq[h] = w[i * heads + h] * headScale * q.scales()[i * heads + h] * scale;
    }
    float[] out = new float[len];
    for (int p = 0; p < len; p++) {
      float sum = 0;
      for (int h = 0; h < heads; h++) {
        float dot = 0;
        for (int d = 0; d < dim; d++) {
          dot += q.values()[(i * heads + h) * dim + d] * keyValues[p * dim + d];
        }
        sum += wq[h] * Math.max(dot, 0f);
      }
      out[p] = sum * keyScales[p];
    }
    return out;
  }

  /**
   * The CPU's rule: the k highest scores, ties to the earlier position, ascending; all if fewer.
   */
  private static int[] topK(float[] scores, int k) {
    int n = scores.length;
    Integer[] order = new Integer[n];
    Arrays.setAll(order, p -> p);
    Arrays.sort(
        order,
        (a, b) -> {
          int c = Float.compare(scores[b] + 0f, scores[a] + 0f);
          return c != 0 ? c : Integer.compare(a, b);
        });
    int[] out = new int[Math.min(k, n)];
    for (int j = 0; j < out.length; j++) {
      out[j] = order[j];
    }
    Arrays.sort(out);
    return out;
  }

  @ParameterizedTest
  @CsvSource({
    // index heads, index dim, topK, block size, sequence lengths (;-separated)
    "4,16,8,16,1;8;9;37",
    "8,64,64,16,1000;64;65;3",
    "32,128,2048,64,3000;2048;2049;100",
    "64,128,2048,64,5001",
    "32,128,16,64,130000"
  })
  void quantizationScoresAndSelectionsFollowTheCpuRule(
      int heads, int dim, int topK, int blockSize, String lengths) {
    Rand r = new Rand();
    int[] lens = Arrays.stream(lengths.split(";")).mapToInt(Integer::parseInt).toArray();
    int seqs = lens.length;
    Paged layout = paged(r, lens, blockSize);
    // f32 keys in token order; every third repeats an earlier key (equal scores), and the first
    // key of sequence 0 is all zeros (scale 1).
    int total = Arrays.stream(lens).sum();
    float[] keys = new float[total * dim];
    int[] slots = new int[total];
    int[] first = new int[seqs];
    int at = 0;
    for (int s = 0; s < seqs; s++) {
      first[s] = at;
      for (int p = 0; p < lens[s]; p++, at++) {
        slots[at] = layout.slot()[s][p];
        if (s == 0 && p == 0) {
          continue;
        }
        if (p > 0 && r.nextInt(3) == 0) {
          int earlier = first[s] + r.nextInt(p);
          System.arraycopy(keys, earlier * dim, keys, at * dim, dim);
        } else {
          System.arraycopy(r.uniform(dim, 1f), 0, keys, at * dim, dim);
        }
      }
    }
    Quantized want = quantize(keys, total, dim);
    // Queries: the last position of each sequence and a few earlier ones.
    List<int[]> queries = new ArrayList<>();
    java.util.Set<Long> seen = new java.util.HashSet<>();
    for (int s = 0; s < seqs; s++) {
      for (int p : new int[] {lens[s] - 1, lens[s] / 2, Math.min(lens[s] - 1, topK)}) {
        if (seen.add((long) s << 32 | p)) {
          queries.add(new int[] {s, p});
        }
      }
    }
    int t = queries.size();
    int[] tokenSeq = queries.stream().mapToInt(q -> q[0]).toArray();
    int[] tokenPos = queries.stream().mapToInt(q -> q[1]).toArray();
    float[] q = r.uniform(t * heads * dim, 1f);
    float[] w = r.uniform(t * heads, 1f);
    Quantized wantQ = quantize(q, t * heads, dim);
    float scale = (float) (1.0 / Math.sqrt(dim));
    float headScale = (float) (1.0 / Math.sqrt(heads));
    int maxLen = Arrays.stream(lens).max().orElseThrow();
    int ld = (maxLen + 3) & ~3;
    int slotsInPool = layout.poolBlocks() * blockSize;
    byte[][] gotCodes = new byte[1][];
    float[][] gotScales = new float[1][];
    float[][] gotQ = new float[2][];
    float[][] gotScores = new float[2][];
    int[][] gotSel = new int[2][];
    Gpu.run(
        s -> {
          var k = Gpu.kernels();
          DeviceBuffer codes = s.alloc(slotsInPool * (long) dim);
          DeviceBuffer kScales = s.poisoned(slotsInPool);
          DeviceBuffer keyPtr = s.f32(keys);
          DeviceBuffer slotPtr = s.i32(slots);
          k.dsa()
              .quantizeFp8(
                  s.stream(),
                  codes.ptr(),
                  kScales.ptr(),
                  0,
                  keyPtr.ptr(),
                  slotPtr.ptr(),
                  total,
                  dim);
          gotCodes[0] = s.readBytes(codes, slotsInPool * dim);
          gotScales[0] = s.read(kScales, slotsInPool);
          DeviceBuffer qPtr = s.f32(q);
          DeviceBuffer qScales = s.poisoned((long) t * heads);
          k.dsa()
              .quantizeFp8(s.stream(), 0, qScales.ptr(), qPtr.ptr(), qPtr.ptr(), 0, t * heads, dim);
          gotQ[0] = s.read(qPtr, t * heads * dim);
          gotQ[1] = s.read(qScales, t * heads);
          DeviceBuffer wPtr = s.f32(w);
          DeviceBuffer tablePtr = s.i32(layout.table());
          DeviceBuffer seqPtr = s.i32(tokenSeq);
          DeviceBuffer posPtr = s.i32(tokenPos);
          int chunks = Math.max(2, DsaLaunchShapes.topKChunks(maxLen));
          DeviceBuffer state = s.alloc(DsaLaunchShapes.topKStateBytes(t, chunks));
          try {
            for (int v = 0; v < 2; v++) {
              boolean fast = v == 1;
              k.dsa().useIndexerTensorCores(fast);
              assertThat(k.dsa().indexerUsesTensorCores(heads, dim, true)).isEqualTo(fast);
              DeviceBuffer scores = s.poisoned((long) t * ld);
              DeviceBuffer sel = s.alloc(4L * t * topK);
              k.dsa()
                  .scoresFp8(
                      s.stream(),
                      scores.ptr(),
                      ld,
                      qPtr.ptr(),
                      qScales.ptr(),
                      wPtr.ptr(),
                      codes.ptr(),
                      kScales.ptr(),
                      tablePtr.ptr(),
                      layout.maxBlocks(),
                      seqPtr.ptr(),
                      posPtr.ptr(),
                      0,
                      t,
                      heads,
                      dim,
                      blockSize,
                      scale,
                      headScale,
                      DsaLaunchShapes.scoreBlocks(t, maxLen, 132));
              if (fast) {
                k.dsa()
                    .topKMulti(
                        s.stream(),
                        sel.ptr(),
                        topK,
                        scores.ptr(),
                        ld,
                        posPtr.ptr(),
                        0,
                        t,
                        state.ptr(),
                        chunks);
              } else {
                k.dsa().topK(s.stream(), sel.ptr(), topK, scores.ptr(), ld, posPtr.ptr(), 0, t);
              }
              gotScores[v] = s.read(scores, t * ld);
              gotSel[v] = s.readInts(sel, t * topK);
            }
          } finally {
            k.dsa().useIndexerTensorCores(true);
          }
        });
    // Keys and queries: the CPU's bytes.
    for (int s = 0; s < seqs; s++) {
      for (int p = 0; p < lens[s]; p++) {
        int slot = layout.slot()[s][p];
        int i = first[s] + p;
        assertThat(Arrays.copyOfRange(gotCodes[0], slot * dim, (slot + 1) * dim))
            .as("codes of sequence %d position %d (seed %d)", s, p, r.seed())
            .containsExactly(Arrays.copyOfRange(want.codes(), i * dim, (i + 1) * dim));
        assertThat(gotScales[0][slot])
            .as("scale of sequence %d position %d", s, p)
            .isEqualTo(want.scales()[i]);
      }
    }
    assertThat(gotScales[0][layout.slot()[0][0]]).as("an all-zero key").isEqualTo(1f);
    assertThat(Compare.bits(gotQ[0]))
        .as("query code values")
        .containsExactly(Compare.bits(wantQ.values()));
    assertThat(gotQ[1]).as("query scales").containsExactly(wantQ.scales());
    for (int v = 0; v < 2; v++) {
      String variant = v == 1 ? "tensor cores, multi-block top-k" : "CUDA cores, one-block top-k";
      for (int i = 0; i < t; i++) {
        int len = tokenPos[i] + 1;
        int s0 = first[tokenSeq[i]];
        float[] keyValues = Arrays.copyOfRange(want.values(), s0 * dim, (s0 + len) * dim);
        float[] keyScales = Arrays.copyOfRange(want.scales(), s0, s0 + len);
        float[] ref =
            reference(wantQ, w, keyValues, keyScales, i, len, heads, dim, scale, headScale);
        float[] got = Arrays.copyOfRange(gotScores[v], i * ld, i * ld + len);
        Compare.assertClose(
            variant + ": scores of query " + i + " (context " + len + ", seed " + r.seed() + ")",
            got,
            ref,
            1e-5);
        int[] sel = Arrays.copyOfRange(gotSel[v], i * topK, (i + 1) * topK);
        int count = Math.min(len, topK);
        assertThat(Arrays.copyOf(sel, count))
            .as("%s: selection of query %d (context %d, seed %d)", variant, i, len, r.seed())
            .containsExactly(topK(got, topK));
        for (int j = count; j < topK; j++) {
          assertThat(sel[j]).as("%s: unused entry %d of query %d", variant, j, i).isEqualTo(-1);
        }
      }
    }
  }

  @ParameterizedTest
  @CsvSource({
    // index heads, index dim, block size, context, query rows (the last positions)
    "4,16,16,37,3",
    "32,128,64,3000,4",
    "64,128,64,5001,2"
  })
  void prefillGatherAndReductionMatchTheReference(
      int heads, int dim, int blockSize, int ctx, int rows) {
    Rand r = new Rand();
    Paged layout = paged(r, new int[] {ctx}, blockSize);
    float[] keys = r.uniform(ctx * dim, 1f);
    Quantized want = quantize(keys, ctx, dim);
    int slotsInPool = layout.poolBlocks() * blockSize;
    byte[] cacheCodes = new byte[slotsInPool * dim];
    float[] cacheScales = new float[slotsInPool];
    for (int p = 0; p < ctx; p++) {
      int slot = layout.slot()[0][p];
      System.arraycopy(want.codes(), p * dim, cacheCodes, slot * dim, dim);
      cacheScales[slot] = want.scales()[p];
    }
    int[] tokenPos = new int[rows];
    for (int i = 0; i < rows; i++) {
      tokenPos[i] = ctx - rows + i;
    }
    float[] q = r.uniform(rows * heads * dim, 1f);
    float[] w = r.uniform(rows * heads, 1f);
    Quantized wantQ = quantize(q, rows * heads, dim);
    // The GEMM's output: S[i * heads + h][p] = qc[i, h] . kc[p], exact products summed in f32.
    float[] dots = new float[rows * heads * ctx];
    for (int i = 0; i < rows * heads; i++) {
      for (int p = 0; p < ctx; p++) {
        float dot = 0;
        for (int d = 0; d < dim; d++) {
          dot += wantQ.values()[i * dim + d] * want.values()[p * dim + d];
        }
        dots[i * ctx + p] = dot;
      }
    }
    float scale = (float) (1.0 / Math.sqrt(dim));
    float headScale = (float) (1.0 / Math.sqrt(heads));
    int ld = (ctx + 3) & ~3;
    short[][] gathered = new short[1][];
    float[][] gatheredScales = new float[1][];
    float[][] scores = new float[1][];
    Gpu.run(
        s -> {
          var k = Gpu.kernels();
          DeviceBuffer codes = s.u8(cacheCodes);
          DeviceBuffer kScales = s.f32(cacheScales);
          DeviceBuffer table = s.i32(layout.table());
          DeviceBuffer out = s.alloc(2L * ctx * dim);
          DeviceBuffer outScales = s.poisoned(ctx);
          k.dsa()
              .gatherFp8(
                  s.stream(),
                  out.ptr(),
                  outScales.ptr(),
                  codes.ptr(),
                  kScales.ptr(),
                  table.ptr(),
                  ctx,
                  dim,
                  blockSize);
          gathered[0] = s.readShorts(out, ctx * dim);
          gatheredScales[0] = s.read(outScales, ctx);
          DeviceBuffer dotPtr = s.f32(dots);
          DeviceBuffer wPtr = s.f32(w);
          DeviceBuffer qScales = s.f32(wantQ.scales());
          DeviceBuffer posPtr = s.i32(tokenPos);
          DeviceBuffer scorePtr = s.poisoned((long) rows * ld);
          k.dsa()
              .reduceScoresFp8(
                  s.stream(),
                  scorePtr.ptr(),
                  ld,
                  dotPtr.ptr(),
                  ctx,
                  wPtr.ptr(),
                  qScales.ptr(),
                  outScales.ptr(),
                  posPtr.ptr(),
                  0,
                  rows,
                  heads,
                  scale,
                  headScale);
          scores[0] = s.read(scorePtr, rows * ld);
        });
    for (int p = 0; p < ctx; p++) {
      for (int d = 0; d < dim; d++) {
        float got = dev.ringmaster.backend.cpu.Numerics.bf16ToFloat(gathered[0][p * dim + d]);
        assertThat(got).as("gathered key %d dim %d", p, d).isEqualTo(want.values()[p * dim + d]);
      }
    }
    assertThat(gatheredScales[0]).containsExactly(want.scales());
    for (int i = 0; i < rows; i++) {
      int len = tokenPos[i] + 1;
      float[] ref =
          reference(wantQ, w, want.values(), want.scales(), i, len, heads, dim, scale, headScale);
      Compare.assertClose(
          "reduced scores of row " + i + " (seed " + r.seed() + ")",
          Arrays.copyOfRange(scores[0], i * ld, i * ld + len),
          ref,
          1e-5);
    }
  }
}
