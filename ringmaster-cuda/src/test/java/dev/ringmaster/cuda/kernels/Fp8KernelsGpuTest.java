package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Dequantizer;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.backend.cpu.Quantization;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FP8 block-scaled kernels ({@link Fp8Kernels}, {@link MoeKernels#moeExpertPairsFp8}) against
 * the CPU's dequantizing reference ({@link Dequantizer} on each separately quantized part, then an
 * f64 product); {@link Fp8FusedKernelsGpuTest} has the fused GEMVs and the tensor-core experts'
 * comparison with the bf16 ones. Random e4m3 codes (every finite code) and block scales; matrices
 * are stacks of parts with their own scale blocks, like the fused gate|up matrix and stacked
 * experts; shapes include rows and columns that end inside a 128-block and K not a multiple of 16
 * (the scalar path). Tolerance 1e-5 relative for the GEMVs (f32 accumulation of exactly decoded
 * codes, as the bf16 GEMV's bound), 1e-4 for the experts (two chained projections and SiLU, as
 * MoeGpuTest); the bf16 dequantization is bit for bit the f32 product rounded to nearest even.
 */
@Tag("gpu")
class Fp8KernelsGpuTest {
  /** An FP8 stack of parts: codes {@code [parts * partRows, k]} and scales per part's blocks. */
  record Fp8Stack(byte[] codes, float[] scales, float[] values, int partRows, int k) {
    int rows() {
      return codes.length / k;
    }
  }

  static int blocks(int n) {
    return (n + 127) / 128;
  }

  /** Random codes (no NaN) and scales of {@code parts} parts, with their dequantized values. */
  static Fp8Stack stack(Rand r, int parts, int partRows, int k) {
    return stack(r, parts, partRows, k, false);
  }

  /**
   * {@link #stack}; with {@code powerOfTwoScales} every scale is one of 2^-9 .. 2^-5, so that each
   * dequantized value is exactly a bf16 value (an e4m3 value times a power of two).
   */
  static Fp8Stack stack(Rand r, int parts, int partRows, int k, boolean powerOfTwoScales) {
    int sr = blocks(partRows);
    int sc = blocks(k);
    byte[] codes = new byte[parts * partRows * k];
    float[] scales = new float[parts * sr * sc];
    float[] values = new float[codes.length];
    try (Arena arena = Arena.ofConfined()) {
      for (int p = 0; p < parts; p++) {
        MemorySegment c = arena.allocate((long) partRows * k);
        MemorySegment s = arena.allocate(4L * sr * sc, 4);
        for (int i = 0; i < partRows * k; i++) {
          int b;
          do {
            b = r.nextInt(256);
          } while ((b & 0x7f) == 0x7f);
          codes[p * partRows * k + i] = (byte) b;
          c.set(ValueLayout.JAVA_BYTE, i, (byte) b);
        }
        for (int i = 0; i < sr * sc; i++) {
          float v =
              powerOfTwoScales
                  ? Math.scalb(1f, -9 + r.nextInt(5))
                  : (float) (0.002 + 0.01 * r.random().nextDouble());
          scales[p * sr * sc + i] = v;
          s.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
        }
        float[] part =
            Dequantizer.matrix(
                new CpuMatrix(c, DType.F8_E4M3, partRows, k, new Quantization.Fp8Block(s, sc)));
        System.arraycopy(part, 0, values, p * partRows * k, part.length);
      }
    }
    return new Fp8Stack(codes, scales, values, partRows, k);
  }

  /** The bytes on the device (packed four to an int, zero-padded). */
  static DeviceBuffer upload(DeviceScope s, byte[] bytes) {
    int[] words = new int[(bytes.length + 3) / 4];
    for (int i = 0; i < bytes.length; i++) {
      words[i / 4] |= (bytes[i] & 0xff) << (8 * (i % 4));
    }
    return s.i32(words);
  }

  @ParameterizedTest
  @CsvSource({
    // parts, rows per part, K, tokens
    "1,2048,2048,1", // V2-Lite o_proj
    "1,576,2048,2", // kv_a_proj_with_mqa: ends in a partial 128-row block
    "2,144,144,3", // a gate|up pair of 144 rows: both dimensions end inside a block
    "2,1408,2048,4",
    "1,37,72,1",
    "1,130,200,4", // K % 16 != 0: the scalar path
    "3,5,16,2",
    "1,1,8,1",
    "1,300,256,7", // two groups of tokens, the second of 3
    "1,3,32,1" // 3 rows: the second warp's second row is past the end
  })
  void gemvMatchesTheDequantizedReference(int parts, int partRows, int k, int n) {
    Rand r = new Rand();
    Fp8Stack w = stack(r, parts, partRows, k);
    int m = w.rows();
    float[] x = r.uniform(n * k, 1f);
    float[] want = GemvGpuTest.reference(w.values(), x, m, k, n);
    Gpu.run(
        s -> {
          DeviceBuffer y = s.poisoned((long) n * m);
          Gpu.kernels()
              .fp8()
              .gemv(
                  s.stream(),
                  y.ptr(),
                  upload(s, w.codes()).ptr(),
                  s.f32(w.scales()).ptr(),
                  partRows,
                  s.f32(x).ptr(),
                  m,
                  k,
                  n);
          Compare.assertClose(
              "fp8 gemv " + parts + "x" + partRows + "x" + k + ", seed " + r.seed(),
              s.read(y, n * m),
              want,
              1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({"1,576,2048", "2,144,144", "1,130,200", "3,5,6"})
  void dequantizationRoundsTheProductToBf16(int parts, int partRows, int k) {
    Rand r = new Rand();
    Fp8Stack w = stack(r, parts, partRows, k);
    int m = w.rows();
    int[] want = new int[m * k];
    for (int i = 0; i < want.length; i++) {
      want[i] = Numerics.floatToBf16(w.values()[i]) & 0xffff;
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(2L * m * k + 4);
          out.poison(s.stream());
          Gpu.kernels()
              .fp8()
              .dequantToBf16(
                  s.stream(),
                  out.ptr(),
                  upload(s, w.codes()).ptr(),
                  s.f32(w.scales()).ptr(),
                  partRows,
                  m,
                  k);
          int[] words = s.readInts(out, (m * k + 1) / 2);
          int[] got = new int[m * k];
          for (int i = 0; i < got.length; i++) {
            got[i] = (words[i / 2] >>> (16 * (i % 2))) & 0xffff;
          }
          assertThat(got)
              .as("bf16 of fp8 x scale, %dx%dx%d, seed %d", parts, partRows, k, r.seed())
              .isEqualTo(want);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter
    "1,8,6,2048,1408", // V2-Lite expert shape
    "4,8,2,256,144", // inter ends inside a block: gate and up parts of 144 rows
    "9,4,2,200,40", // K % 16 != 0 in the down projection, passes of 8 pairs
    "32,16,4,128,96"
  })
  void expertsMatchTheDequantizedReference(int n, int e, int k, int hidden, int inter) {
    expertsAgainstReference(n, e, k, hidden, inter, false, MoeKernels.MOE_MMA_PASS_TOKENS, 1e-4);
  }

  /**
   * The tensor-core FP8 experts against the same reference: activations and the SwiGLU intermediate
   * are rounded to bf16 (as for the bf16 tensor-core experts, MoeGpuTest), hence 1e-2. Shapes: one
   * token, an expert with more than a pass (of 8 or of 32 tokens), rows and K ending inside a
   * 128-block, inside a 64-k chunk and inside a 64-row block tile, K a multiple of 8 but not 16
   * (two 8-byte loads per 16 codes), each for both pass sizes.
   */
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, tokens per pass
    "1,8,6,2048,1408,8",
    "1,8,6,2048,1408,32",
    "8,8,6,2048,1408,8", // V2-Lite expert shape, 48 pairs
    "8,8,6,2048,1408,32",
    "40,4,2,256,144,8", // 80 pairs over 4 experts: passes of 8, or of 32, and a remainder
    "40,4,2,256,144,32",
    "9,4,2,200,40,8", // K = 200 and 40: partial scale blocks, 8 | K but not 16
    "9,4,2,200,40,32",
    "5,3,2,176,208,8", // 16 | K, K % 64 = 48 and 16: a chunk ends inside each row
    "5,3,2,176,208,32",
    "3,2,2,136,72,8",
    "130,8,2,64,8,8",
    "130,8,2,64,8,32"
  })
  void tensorCoreExpertsMatchTheDequantizedReference(
      int n, int e, int k, int hidden, int inter, int passTokens) {
    expertsAgainstReference(n, e, k, hidden, inter, true, passTokens, 1e-2);
  }

  private void expertsAgainstReference(
      int n, int e, int k, int hidden, int inter, boolean tensorCores, int passTokens, double tol) {
    Rand r = new Rand();
    Fp8Stack w13 = stack(r, 2 * e, inter, hidden);
    Fp8Stack w2 = stack(r, e, hidden, inter);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < k; j++) {
        experts[t * k + j] = (t + j * (1 + t % 3)) % e; // distinct: k <= e, steps coprime or 1
        weights[t * k + j] = (float) r.random().nextDouble();
      }
      distinct(experts, t, k, e);
    }
    float[] want =
        MoeGpuTest.reference(x, w13.values(), w2.values(), experts, weights, n, k, hidden, inter);
    Gpu.run(
        s -> {
          try (MoeWorkspace ws = new MoeWorkspace(n, e, k, hidden, inter)) {
            ws.h.poison(s.stream());
            ws.y.poison(s.stream());
            DeviceBuffer out = s.poisoned((long) n * hidden);
            MoeKernels moe = Gpu.kernels().moe();
            moe.moeExpertPairsFp8(
                s.stream(),
                ws,
                s.f32(x).ptr(),
                upload(s, w13.codes()).ptr(),
                s.f32(w13.scales()).ptr(),
                upload(s, w2.codes()).ptr(),
                s.f32(w2.scales()).ptr(),
                s.i32(experts).ptr(),
                s.f32(weights).ptr(),
                n,
                hidden,
                inter,
                tensorCores,
                false,
                passTokens);
            moe.moeCombine(s.stream(), out.ptr(), ws.pairRowsPtr(), n, hidden, k, false);
            Compare.assertClose(
                "fp8 experts "
                    + n
                    + " tokens, tensor cores "
                    + tensorCores
                    + ", passes of "
                    + passTokens
                    + ", seed "
                    + r.seed(),
                s.read(out, n * hidden),
                want,
                tol);
          }
        });
  }

  /** Replaces repeated experts of token {@code t} by the lowest unused ids. */
  private static void distinct(int[] experts, int t, int k, int e) {
    boolean[] used = new boolean[e];
    for (int j = 0; j < k; j++) {
      int id = experts[t * k + j];
      while (used[id]) {
        id = (id + 1) % e;
      }
      used[id] = true;
      experts[t * k + j] = id;
    }
  }
}
