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
 * The NVFP4 kernels ({@link Nvfp4Kernels}) against the CPU's dequantizing reference ({@link
 * Dequantizer} on each separately quantized part, then an f64 product). Random e2m1 codes (all 16,
 * -0 included), random finite positive e4m3 group scales (subnormal ones included) and a random
 * global scale per part; matrices are stacks of parts like the fused gate|up matrix and stacked
 * experts; K a multiple of 32 (16-byte loads) or of 16 only (8-byte loads), rows ending inside a
 * warp's or a block's tile. Tolerances: 1e-5 relative for the GEMVs and the CUDA-core experts
 * (exactly decoded codes, f32 accumulation; the group scale multiplies a group's sum instead of
 * each product), 1e-2 for the tensor-core experts (activations and the SwiGLU intermediate rounded
 * to bf16, as the bf16 and FP8 tensor-core experts); the bf16 dequantization is bit for bit the
 * reference value rounded to nearest even.
 */
@Tag("gpu")
class Nvfp4KernelsGpuTest {
  /**
   * An NVFP4 stack of parts: codes in checkpoint order {@code [rows, k / 2]}, e4m3 scales {@code
   * [rows, k / 16]}, one global scale per part, and the dequantized values.
   */
  record Nvfp4Stack(
      byte[] codes, byte[] scales, float[] globals, float[] values, int partRows, int k) {
    int rows() {
      return 2 * codes.length / k;
    }

    /** The codes in the device nibble order, packed four bytes to an int. */
    int[] deviceWords() {
      int[] words = new int[codes.length / 4];
      for (int i = 0; i < codes.length; i++) {
        words[i / 4] |= (codes[i] & 0xff) << (8 * (i % 4));
      }
      for (int i = 0; i < words.length; i++) {
        words[i] = Nvfp4Layout.toDeviceWord(words[i]);
      }
      return words;
    }
  }

  static Nvfp4Stack stack(Rand r, int parts, int partRows, int k) {
    int groups = k / 16;
    byte[] codes = new byte[parts * partRows * k / 2];
    byte[] scales = new byte[parts * partRows * groups];
    float[] globals = new float[parts];
    float[] values = new float[parts * partRows * k];
    try (Arena arena = Arena.ofConfined()) {
      for (int p = 0; p < parts; p++) {
        MemorySegment c = arena.allocate((long) partRows * k / 2);
        MemorySegment s = arena.allocate((long) partRows * groups);
        for (int i = 0; i < partRows * k / 2; i++) {
          byte b = (byte) r.nextInt(256);
          codes[p * partRows * k / 2 + i] = b;
          c.set(ValueLayout.JAVA_BYTE, i, b);
        }
        for (int i = 0; i < partRows * groups; i++) {
          // positive finite e4m3: 0x01 (2^-9, subnormal) .. 0x7e (448)
          byte b = (byte) (1 + r.nextInt(0x7e));
          scales[p * partRows * groups + i] = b;
          s.set(ValueLayout.JAVA_BYTE, i, b);
        }
        globals[p] = (float) (1e-3 * (0.5 + r.random().nextDouble()));
        float[] part =
            Dequantizer.matrix(
                new CpuMatrix(c, DType.U8, partRows, k, new Quantization.Nvfp4(s, globals[p])));
        System.arraycopy(part, 0, values, p * partRows * k, part.length);
      }
    }
    return new Nvfp4Stack(codes, scales, globals, values, partRows, k);
  }

  static DeviceBuffer bytes(DeviceScope s, byte[] bytes) {
    int[] words = new int[(bytes.length + 3) / 4];
    for (int i = 0; i < bytes.length; i++) {
      words[i / 4] |= (bytes[i] & 0xff) << (8 * (i % 4));
    }
    return s.i32(words);
  }

  @ParameterizedTest
  @CsvSource({
    // parts, rows per part, K, tokens
    "1,2048,2048,1", // V2-Lite o_proj shape
    "2,1408,2048,1", // gate|up of a V2-Lite shared expert
    "1,2048,1408,4", // its down projection: K % 32 == 0, 44 chunks
    "2,144,144,3", // K % 32 == 16: 8-byte loads
    "1,37,80,2",
    "3,5,16,1",
    "1,300,256,7", // two groups of tokens, the second of 3
    "1,3,32,1" // 3 rows: the second warp's second row is past the end
  })
  void gemvMatchesTheDequantizedReference(int parts, int partRows, int k, int n) {
    Rand r = new Rand();
    Nvfp4Stack w = stack(r, parts, partRows, k);
    int m = w.rows();
    float[] x = r.uniform(n * k, 1f);
    float[] want = GemvGpuTest.reference(w.values(), x, m, k, n);
    Gpu.run(
        s -> {
          DeviceBuffer y = s.poisoned((long) n * m);
          Gpu.kernels()
              .nvfp4()
              .gemv(
                  s.stream(),
                  y.ptr(),
                  s.i32(w.deviceWords()).ptr(),
                  bytes(s, w.scales()).ptr(),
                  s.f32(w.globals()).ptr(),
                  partRows,
                  s.f32(x).ptr(),
                  m,
                  k,
                  n);
          Compare.assertClose(
              "nvfp4 gemv " + parts + "x" + partRows + "x" + k + ", seed " + r.seed(),
              s.read(y, n * m),
              want,
              1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({"576,1536,2048,1", "100,30,96,3", "16,8,48,2"})
  void stackedGemvAndSwigluGemvMatchTheReference(int m1, int m2, int k, int n) {
    Rand r = new Rand();
    Nvfp4Stack a = stack(r, 1, m1, k);
    Nvfp4Stack b = stack(r, 1, m2, k);
    Nvfp4Stack gu = stack(r, 2, m2, k);
    float[] x = r.uniform(n * k, 1f);
    float[] wantA = GemvGpuTest.reference(a.values(), x, m1, k, n);
    float[] wantB = GemvGpuTest.reference(b.values(), x, m2, k, n);
    float[] g = GemvGpuTest.reference(gu.values(), x, 2 * m2, k, n);
    float[] wantSwiglu = new float[n * m2];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < m2; j++) {
        double gate = g[t * 2 * m2 + j];
        double up = g[t * 2 * m2 + m2 + j];
        wantSwiglu[t * m2 + j] = (float) (gate / (1 + Math.exp(-gate)) * up);
      }
    }
    Gpu.run(
        s -> {
          DeviceBuffer y1 = s.poisoned((long) n * m1);
          DeviceBuffer y2 = s.poisoned((long) n * m2);
          DeviceBuffer act = s.poisoned((long) n * m2);
          DeviceBuffer xs = s.f32(x);
          Nvfp4Kernels k4 = Gpu.kernels().nvfp4();
          k4.gemv2(
              s.stream(),
              y1.ptr(),
              s.i32(a.deviceWords()).ptr(),
              bytes(s, a.scales()).ptr(),
              s.f32(a.globals()).ptr(),
              m1,
              m1,
              y2.ptr(),
              s.i32(b.deviceWords()).ptr(),
              bytes(s, b.scales()).ptr(),
              s.f32(b.globals()).ptr(),
              m2,
              m2,
              xs.ptr(),
              k,
              n);
          k4.gemvSwiglu(
              s.stream(),
              act.ptr(),
              s.i32(gu.deviceWords()).ptr(),
              bytes(s, gu.scales()).ptr(),
              s.f32(gu.globals()).ptr(),
              xs.ptr(),
              m2,
              k,
              n);
          String what = m1 + "+" + m2 + "x" + k + ", seed " + r.seed();
          Compare.assertClose("nvfp4 gemv2 first " + what, s.read(y1, n * m1), wantA, 1e-5);
          Compare.assertClose("nvfp4 gemv2 second " + what, s.read(y2, n * m2), wantB, 1e-5);
          Compare.assertClose("nvfp4 swiglu gemv " + what, s.read(act, n * m2), wantSwiglu, 1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({"2,144,144", "1,37,2048", "3,5,16"})
  void dequantizationRoundsTheReferenceToBf16(int parts, int partRows, int k) {
    Rand r = new Rand();
    Nvfp4Stack w = stack(r, parts, partRows, k);
    int m = w.rows();
    int[] want = new int[m * k];
    for (int i = 0; i < want.length; i++) {
      want[i] = Numerics.floatToBf16(w.values()[i]) & 0xffff;
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(2L * m * k);
          out.poison(s.stream());
          Gpu.kernels()
              .nvfp4()
              .dequantToBf16(
                  s.stream(),
                  out.ptr(),
                  s.i32(w.deviceWords()).ptr(),
                  bytes(s, w.scales()).ptr(),
                  s.f32(w.globals()).ptr(),
                  partRows,
                  m,
                  k);
          int[] words = s.readInts(out, m * k / 2);
          int[] got = new int[m * k];
          for (int i = 0; i < got.length; i++) {
            got[i] = (words[i / 2] >>> (16 * (i % 2))) & 0xffff;
          }
          assertThat(got)
              .as("bf16 of e2m1 x (e4m3 x global), %dx%dx%d, seed %d", parts, partRows, k, r.seed())
              .isEqualTo(want);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter
    "1,8,6,2048,1408", // V2-Lite expert shape
    "4,8,2,256,144", // K % 32 == 16 in the down projection
    "9,4,2,208,48", // passes of 8 pairs and a remainder
    "32,16,4,128,96"
  })
  void cudaCoreExpertsMatchTheDequantizedReference(int n, int e, int k, int hidden, int inter) {
    experts(n, e, k, hidden, inter, false, Nvfp4Kernels.MOE_MMA_PASS_TOKENS, 1e-5);
  }

  /**
   * The tensor-core NVFP4 experts: one token, an expert with more than a pass (of 8 or of 32
   * tokens), rows ending inside a warp's 16 and a block's 64, K % 128 != 0 (a chunk ends inside
   * each row) and K % 32 == 16 (two 8-byte loads per 32 codes), each for both pass sizes.
   */
  @ParameterizedTest
  @CsvSource({
    // tokens, experts, topK, hidden, inter, tokens per pass
    "1,8,6,2048,1408,8",
    "1,8,6,2048,1408,32",
    "8,8,6,2048,1408,8", // V2-Lite expert shape, 48 pairs
    "8,8,6,2048,1408,32",
    "40,4,2,256,144,8", // 80 pairs over 4 experts; inter % 32 == 16
    "40,4,2,256,144,32",
    "9,4,2,208,48,8", // hidden % 32 == 16
    "9,4,2,208,48,32",
    "5,3,2,176,80,8",
    "5,3,2,176,80,32",
    "130,8,2,64,16,8",
    "130,8,2,64,16,32"
  })
  void tensorCoreExpertsMatchTheDequantizedReference(
      int n, int e, int k, int hidden, int inter, int passTokens) {
    experts(n, e, k, hidden, inter, true, passTokens, 1e-2);
  }

  private void experts(
      int n, int e, int k, int hidden, int inter, boolean tensorCores, int passTokens, double tol) {
    Rand r = new Rand();
    Nvfp4Stack w13 = stack(r, 2 * e, inter, hidden);
    Nvfp4Stack w2 = stack(r, e, hidden, inter);
    float[] x = r.uniform(n * hidden, 1f);
    int[] experts = new int[n * k];
    float[] weights = new float[n * k];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < k; j++) {
        experts[t * k + j] = (t + j * (1 + t % 3)) % e;
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
            Gpu.kernels()
                .nvfp4()
                .moeExpertPairs(
                    s.stream(),
                    moe,
                    ws,
                    s.f32(x).ptr(),
                    s.i32(w13.deviceWords()).ptr(),
                    bytes(s, w13.scales()).ptr(),
                    s.f32(w13.globals()).ptr(),
                    s.i32(w2.deviceWords()).ptr(),
                    bytes(s, w2.scales()).ptr(),
                    s.f32(w2.globals()).ptr(),
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
                "nvfp4 experts "
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
