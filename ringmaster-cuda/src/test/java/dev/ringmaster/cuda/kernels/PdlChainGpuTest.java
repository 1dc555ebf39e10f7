package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.blas.CublasHandle;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.DeviceScope;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Programmatic dependent launch on chains where every kernel reads what the previous one wrote:
 * with PDL on, a dependent's blocks start while its predecessor still runs, so a kernel that
 * touched memory before its {@code griddepcontrol.wait} would read stale values here. Grids span
 * several waves so that early-launched blocks share the GPU with the predecessor's last wave.
 */
@Tag("gpu")
class PdlChainGpuTest {
  private static final int LAUNCHES = 50;

  /** Runs {@code body} with the shared kernels' PDL set to {@code on}, restoring it afterwards. */
  private static void withPdl(boolean on, Runnable body) {
    RingmasterKernels k = Gpu.kernels();
    boolean before = k.programmaticDependentLaunch();
    k.setProgrammaticDependentLaunch(on);
    try {
      assertThat(k.programmaticDependentLaunch()).isEqualTo(on);
      body.run();
    } finally {
      k.setProgrammaticDependentLaunch(before);
    }
  }

  @Test
  void fiftyDependentAddsInAGraphGiveTheExactSum() {
    // 1M elements: 4,096 blocks of 256 threads, several waves on any GPU.
    int rows = 256;
    int cols = 4096;
    Rand r = new Rand();
    float[] y0 = r.uniform(rows * cols, 4f);
    float[] biases = r.uniform(LAUNCHES * cols, 1f);
    float[] once = y0.clone();
    addAll(once, biases, rows, cols);
    float[] twice = once.clone();
    addAll(twice, biases, rows, cols);
    Gpu.run(
        s ->
            withPdl(
                true,
                () -> {
                  DeviceBuffer y = s.f32(y0);
                  DeviceBuffer b = s.f32(biases);
                  CudaStream st = s.stream();
                  try (CudaGraph g =
                      st.capture(
                          () -> {
                            for (int i = 0; i < LAUNCHES; i++) {
                              Gpu.kernels().addBias(st, y.ptr(), b.ptr(4L * i * cols), rows, cols);
                            }
                          })) {
                    g.launch(st);
                    assertSameFloats("one replay, seed " + r.seed(), s.read(y, rows * cols), once);
                    g.launch(st); // and across the boundary between two replays
                    assertSameFloats(
                        "two replays, seed " + r.seed(), s.read(y, rows * cols), twice);
                  }
                }));
  }

  /**
   * Bit-for-bit equality with the first differing index on failure. Not AssertJ's {@code
   * containsExactly}: it diffs the two arrays as lists first, quadratic in their length, which at a
   * million values runs for hours (that, not the GPU, was the hang this test was first blamed for).
   */
  static void assertSameFloats(String what, float[] got, float[] want) {
    assertThat(got.length).as(what + ": length").isEqualTo(want.length);
    for (int i = 0; i < want.length; i++) {
      if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
        throw new AssertionError(
            what + ": element " + i + " is " + got[i] + ", expected " + want[i]);
      }
    }
  }

  /** {@code y[r, :] += biases[i, :]} for i in launch order, as the GPU chain does it. */
  private static void addAll(float[] y, float[] biases, int rows, int cols) {
    for (int i = 0; i < LAUNCHES; i++) {
      for (int e = 0; e < rows * cols; e++) {
        y[e] += biases[i * cols + e % cols];
      }
    }
  }

  @Test
  void mixedChainWithCopiesAndCublasEqualsPdlOff() {
    Rand r = new Rand();
    Gpu.run(
        s -> {
          Chain c = new Chain(s, r);
          float[] off = c.run(false, true);
          float[] onGraph = c.run(true, true);
          float[] onEager = c.run(true, false);
          for (float v : off) {
            assertThat(Float.isFinite(v)).as("finite output, seed " + r.seed()).isTrue();
          }
          assertThat(off).as("not the input").isNotEqualTo(c.x0);
          assertSameFloats("PDL graph, seed " + r.seed(), onGraph, off);
          assertSameFloats("PDL eager, seed " + r.seed(), onEager, off);
        });
  }

  /**
   * Ten rounds of RMSNorm, GEMV (every output reads every input), a device copy, RMSNorm of the
   * copy (a PDL kernel after a copy node), bf16 rounding, a cuBLAS GEMM and a bias add (a PDL
   * kernel after a library kernel): 50 launches of this project's kernels, hidden 2048 at batch 1.
   */
  private static final class Chain {
    static final int HIDDEN = 2048;
    static final int ROUNDS = LAUNCHES / 5;

    final DeviceScope s;
    final float[] x0;
    final DeviceBuffer x;
    final DeviceBuffer x2;
    final DeviceBuffer h;
    final DeviceBuffer hb;
    final DeviceBuffer norm;
    final DeviceBuffer bias;
    final DeviceBuffer[] w = new DeviceBuffer[4];

    Chain(DeviceScope s, Rand r) {
      this.s = s;
      x0 = r.uniform(HIDDEN, 1f);
      x = s.alloc(4L * HIDDEN);
      x2 = s.alloc(4L * HIDDEN);
      h = s.alloc(4L * HIDDEN);
      hb = s.alloc(2L * HIDDEN);
      norm = s.f32(r.uniform(HIDDEN, 1f));
      bias = s.f32(r.uniform(HIDDEN, 0.1f));
      float scale = (float) (1.5 / Math.sqrt(HIDDEN));
      for (int i = 0; i < w.length; i++) {
        w[i] = s.bf16(r.bf16(HIDDEN * HIDDEN, scale).bits());
      }
    }

    float[] run(boolean pdl, boolean graph) {
      float[][] out = new float[1][];
      withPdl(
          pdl,
          () -> {
            try (CublasHandle blas = new CublasHandle(s.stream())) {
              if (graph) {
                rounds(blas); // warm cuBLAS up before the capture, as the model does
              }
              x.upload(s.stream(), x0);
              if (graph) {
                try (CudaGraph g = s.stream().capture(() -> rounds(blas))) {
                  g.launch(s.stream());
                }
              } else {
                rounds(blas);
              }
              out[0] = s.read(x, HIDDEN);
            }
          });
      return out[0];
    }

    private void rounds(CublasHandle blas) {
      RingmasterKernels k = Gpu.kernels();
      CudaStream st = s.stream();
      for (int i = 0; i < ROUNDS; i++) {
        k.rmsNorm(st, h.ptr(), HIDDEN, 0, 0, x.ptr(), HIDDEN, norm.ptr(), 1, HIDDEN, 1e-6f);
        k.gemv(st, x.ptr(), w[(2 * i) % w.length].ptr(), h.ptr(), HIDDEN, HIDDEN, 1);
        CudaDriver.get().memcpyDtoDAsync(x2.ptr(), x.ptr(), 4L * HIDDEN, st.handle());
        k.rmsNorm(st, h.ptr(), HIDDEN, 0, 0, x2.ptr(), HIDDEN, norm.ptr(), 1, HIDDEN, 1e-6f);
        k.toBf16(st, hb.ptr(), h.ptr(), HIDDEN);
        blas.linear(x.ptr(), hb.ptr(), w[(2 * i + 1) % w.length].ptr(), 1, HIDDEN, HIDDEN, false);
        k.addBias(st, x.ptr(), bias.ptr(), 1, HIDDEN);
      }
    }
  }
}
