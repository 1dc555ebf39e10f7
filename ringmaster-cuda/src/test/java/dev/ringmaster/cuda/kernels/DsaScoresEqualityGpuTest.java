package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.runtime.KernelTuning;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The streaming tensor-core indexer score kernels (rm_indexer_scores_mma, its register-fragment
 * form rm_indexer_scores_mma_regs where at most 32 heads of at most 128 dims allow, and
 * rm_indexer_scores_fp8_mma) give the tiled reference kernels' scores bit for bit ({@link
 * DsaKernels#useTiledScoreKernels}, {@link DsaKernels#useRegisterScoreKernel}), over bf16 and FP8
 * keys in random paged caches (blocks in shuffled order), for any grid: one block per row (every
 * warp strides through many steps), the decode grid ({@link DsaLaunchShapes#scoreBlocks}) and a
 * wider one whose trailing blocks exit at once. Head counts that are not multiples of 16 or of 4
 * exercise the padded heads and the reduction's tail; contexts shorter than one warp's 32
 * positions, between steps and longer than a sweep of the grid meet in one launch; GLM-5's 32 x 128
 * runs up to 130,000 positions. The register kernel that sums its heads in registers ({@link
 * DsaKernels#useQuadScoreKernel}) gives the same scores to f32 rounding (another summation order);
 * its form whose key tiles arrive by bulk copies ({@link DsaKernels#useBulkScoreKernel}) gives the
 * quad kernel's bits on every grid (block size 16 takes its cp.async fallback). Shapes past the
 * register kernel's (48 and 64 heads) take rm_indexer_scores_mma with the option on. Entries past a
 * row's context stay as they were (NaN).
 */
@Tag("gpu")
class DsaScoresEqualityGpuTest {
  @ParameterizedTest
  @CsvSource({
    // index heads, index dim, block size, sequence lengths (;-separated)
    "4,16,16,1;8;33;37",
    "13,64,16,1000;64;65;3",
    "20,128,64,3000;31;2049;100",
    "32,128,64,70001;4096",
    "32,128,64,130000;129999;64;65;1",
    "32,128,16,100003;33;31;2",
    "16,128,32,5001;777",
    "24,96,64,9999;256;257",
    "48,64,64,5001",
    "64,128,64,40000;7"
  })
  void streamingScoresAreTheTiledKernelsBits(int heads, int dim, int blockSize, String lengths) {
    Rand r = new Rand();
    int[] lens = Arrays.stream(lengths.split(";")).mapToInt(Integer::parseInt).toArray();
    int seqs = lens.length;
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
    int[] table = new int[seqs * maxBlocks];
    int next = 0;
    for (int s = 0; s < seqs; s++) {
      for (int b = 0; b < (lens[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
    }
    int slots = pool * blockSize;
    // Keys of every slot: bf16 values, e4m3 codes (no NaN codes) and positive scales.
    short[] keys = r.bf16(slots * dim, 1f).bits();
    byte[] codes = new byte[slots * dim];
    for (int i = 0; i < codes.length; i++) {
      int c = r.nextInt(254);
      codes[i] = (byte) (c >= 0x7f ? c + 1 : c); // skips 0x7f; 0xff is out of range
    }
    float[] kScales = new float[slots];
    for (int i = 0; i < slots; i++) {
      kScales[i] = 0.01f + r.nextInt(1000) / 1000f;
    }
    List<int[]> queries = new ArrayList<>();
    for (int s = 0; s < seqs; s++) {
      queries.add(new int[] {s, lens[s] - 1});
      if (lens[s] > 2) {
        queries.add(new int[] {s, lens[s] / 2});
      }
    }
    int t = queries.size();
    int[] tokenSeq = queries.stream().mapToInt(q -> q[0]).toArray();
    int[] tokenPos = queries.stream().mapToInt(q -> q[1]).toArray();
    float[] q = r.uniform(t * heads * dim, 1f);
    float[] w = r.uniform(t * heads, 1f);
    float scale = (float) (1.0 / Math.sqrt(dim));
    float headScale = (float) (1.0 / Math.sqrt(heads));
    int maxLen = Arrays.stream(lens).max().orElseThrow();
    int ld = (maxLen + 3) & ~3;
    int maxBlocksF = maxBlocks;
    int decodeGrid = DsaLaunchShapes.scoreBlocks(t, maxLen, 132);
    int[] grids = {1, decodeGrid, 4 * decodeGrid + 3};
    // [fp8][run]: run 0 the tiled reference, 1 .. the streaming kernel on each grid (bf16: first
    // with the query re-read from shared memory, then with it in registers where the shape allows,
    // then that with the heads summed in registers, then that with bulk key copies; the FP8
    // kernel has one form and runs four times).
    int runs = 1 + 4 * grids.length;
    boolean registersFit = heads <= 32 && dim <= 128;
    float[][][] got = new float[2][runs][];
    Gpu.run(
        s -> {
          var k = Gpu.kernels();
          DeviceBuffer tablePtr = s.i32(table);
          DeviceBuffer seqPtr = s.i32(tokenSeq);
          DeviceBuffer posPtr = s.i32(tokenPos);
          DeviceBuffer qPtr = s.f32(q);
          DeviceBuffer wPtr = s.f32(w);
          DeviceBuffer keyPtr = s.bf16(keys);
          DeviceBuffer codePtr = s.u8(codes);
          DeviceBuffer kScalePtr = s.f32(kScales);
          // The FP8 kernels' query: the code values and scales of q's heads.
          DeviceBuffer qCodes = s.alloc(4L * t * heads * dim);
          DeviceBuffer qScales = s.alloc(4L * t * heads);
          k.dsa()
              .quantizeFp8(
                  s.stream(), 0, qScales.ptr(), qCodes.ptr(), qPtr.ptr(), 0, t * heads, dim);
          try {
            for (int run = 0; run < runs; run++) {
              boolean tiled = run == 0;
              boolean registers = run > grids.length;
              boolean quad = run > 2 * grids.length;
              boolean bulk = run > 3 * grids.length;
              int grid =
                  tiled
                      ? DsaLaunchShapes.tiledScoreBlocks(t, maxLen, 132)
                      : grids[(run - 1) % grids.length];
              k.dsa().useTiledScoreKernels(tiled);
              k.dsa().useRegisterScoreKernel(registers);
              k.dsa().useQuadScoreKernel(quad);
              k.dsa().useBulkScoreKernel(bulk);
              assertThat(k.dsa().indexerScoresUseRegisters(heads, dim))
                  .as("register kernel taken, run %d", run)
                  .isEqualTo(registers && registersFit);
              assertThat(k.dsa().indexerUsesTensorCores(heads, dim, false)).isTrue();
              assertThat(k.dsa().indexerUsesTensorCores(heads, dim, true)).isTrue();
              DeviceBuffer bf16Scores = s.poisoned((long) t * ld);
              k.dsa()
                  .scores(
                      s.stream(),
                      bf16Scores.ptr(),
                      ld,
                      qPtr.ptr(),
                      wPtr.ptr(),
                      keyPtr.ptr(),
                      tablePtr.ptr(),
                      maxBlocksF,
                      seqPtr.ptr(),
                      posPtr.ptr(),
                      0,
                      t,
                      heads,
                      dim,
                      blockSize,
                      scale,
                      headScale,
                      grid);
              got[0][run] = s.read(bf16Scores, t * ld);
              DeviceBuffer fp8Scores = s.poisoned((long) t * ld);
              k.dsa()
                  .scoresFp8(
                      s.stream(),
                      fp8Scores.ptr(),
                      ld,
                      qCodes.ptr(),
                      qScales.ptr(),
                      wPtr.ptr(),
                      codePtr.ptr(),
                      kScalePtr.ptr(),
                      tablePtr.ptr(),
                      maxBlocksF,
                      seqPtr.ptr(),
                      posPtr.ptr(),
                      0,
                      t,
                      heads,
                      dim,
                      blockSize,
                      scale,
                      headScale,
                      grid);
              got[1][run] = s.read(fp8Scores, t * ld);
            }
          } finally {
            k.dsa().useTiledScoreKernels(false);
            k.dsa().useRegisterScoreKernel(true);
            k.dsa().useQuadScoreKernel(KernelTuning.defaults().indexerScoresQuadReduce());
            k.dsa().useBulkScoreKernel(KernelTuning.defaults().indexerScoresBulkCopy());
          }
        });
    for (int fp8 = 0; fp8 < 2; fp8++) {
      String keyKind = fp8 == 1 ? "fp8" : "bf16";
      for (int i = 0; i < t; i++) {
        int len = tokenPos[i] + 1;
        int[] want = bits(got[fp8][0], i * ld, len);
        for (int run = 1; run < runs; run++) {
          boolean quad = fp8 == 0 && registersFit && run > 2 * grids.length;
          boolean bulk = quad && run > 3 * grids.length;
          String what =
              String.format(
                  "%s keys, query %d (context %d), streaming%s grid %d, seed %d",
                  keyKind,
                  i,
                  len,
                  bulk
                      ? " (bulk key copies, query and head sums in registers)"
                      : quad
                          ? " (query in registers, heads summed in registers)"
                          : run > grids.length && fp8 == 0 && registersFit
                              ? " (query in registers)"
                              : "",
                  grids[(run - 1) % grids.length],
                  r.seed());
          if (bulk) {
            assertThat(bits(got[fp8][run], i * ld, len))
                .as("%s: the quad kernel's bits", what)
                .containsExactly(bits(got[fp8][run - grids.length], i * ld, len));
          } else if (quad) {
            assertClose(got[fp8][run], got[fp8][0], i * ld, len, what);
          } else {
            assertThat(bits(got[fp8][run], i * ld, len)).as(what).containsExactly(want);
          }
          assertThat(firstNumber(got[fp8][run], i * ld + len, i * ld + ld))
              .as("%s: first entry past the context that was written", what)
              .isEqualTo(-1);
        }
        assertThat(Arrays.stream(want).filter(b -> Float.isNaN(Float.intBitsToFloat(b))).count())
            .as("%s keys, tiled reference, query %d: NaN scores", keyKind, i)
            .isZero();
      }
    }
  }

  /**
   * {@code got} equals {@code want} in {@code [from, from + n)} to f32 rounding of a 32-term sum in
   * another order: within 1e-5 absolute plus 1e-5 relative (the scores here are about 0.1-1).
   */
  private static void assertClose(float[] got, float[] want, int from, int n, String what) {
    for (int i = from; i < from + n; i++) {
      float tol = 1e-5f + 1e-5f * Math.abs(want[i]);
      if (!(Math.abs(got[i] - want[i]) <= tol)) {
        throw new AssertionError(
            String.format("%s: position %d is %s, want %s", what, i - from, got[i], want[i]));
      }
    }
  }

  /** The first index in {@code [from, to)} of {@code v} that is not NaN, or -1. */
  private static int firstNumber(float[] v, int from, int to) {
    for (int i = from; i < to; i++) {
      if (!Float.isNaN(v[i])) {
        return i;
      }
    }
    return -1;
  }

  private static int[] bits(float[] v, int from, int n) {
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = Float.floatToRawIntBits(v[from + i]);
    }
    return out;
  }
}
