package dev.ringmaster.cuda.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.cuda.CudaProbe;
import dev.ringmaster.cuda.CudaRuntime;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("gpu")
class DriverGpuTest {
  @Test
  void probeFindsTheGpu() {
    CudaProbe p = CudaRuntime.probe();
    System.out.println(p.summary());
    assertThat(p.available()).as(p.reason()).isTrue();
    assertThat(p.devices()).isNotEmpty();
    assertThat(p.devices().getFirst().multiprocessors()).isPositive();
    assertThat(p.driverVersion()).isGreaterThanOrEqualTo(12000);
  }

  @Test
  void copiesRoundTripThroughDeviceAndPinnedMemory() {
    Rand r = new Rand();
    float[] v = r.uniform(10_001, 3f);
    Gpu.run(
        s -> {
          DeviceBuffer a = s.f32(v);
          DeviceBuffer b = s.poisoned(v.length);
          CudaDriver.get().memcpyDtoDAsync(b.ptr(), a.ptr(), 4L * v.length, s.stream().handle());
          assertThat(s.read(b, v.length)).containsExactly(v);
          try (HostBuffer pinned = HostBuffer.allocate(4L * v.length)) {
            pinned.copyFrom(b, 4L * v.length, s.stream());
            s.stream().synchronize();
            assertThat(pinned.segment().toArray(ValueLayout.JAVA_FLOAT)).containsExactly(v);
          }
          long[] info = CudaDriver.get().memoryInfo();
          assertThat(info[0]).isPositive().isLessThanOrEqualTo(info[1]);
        });
  }

  @Test
  void failedCallsNameTheCallAndTheError() {
    Gpu.run(
        s ->
            assertThatThrownBy(() -> DeviceBuffer.allocate(1L << 50))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("cuMemAlloc_v2")
                .hasMessageContaining("CUDA_ERROR_OUT_OF_MEMORY"));
  }

  @Test
  void eventsTimeAndGraphsReplayAndUpdate() {
    Rand r = new Rand();
    int n = 1 << 20;
    float[] in1 = r.uniform(n, 5f);
    float[] in2 = r.uniform(n, 5f);
    Gpu.run(
        s -> {
          var k = Gpu.kernels();
          DeviceBuffer a = s.f32(in1);
          DeviceBuffer b = s.f32(in2);
          DeviceBuffer out = s.poisoned(n);
          // out = silu(a) * a, captured once; then the graph is updated to read b instead.
          try (CudaGraph g =
                  s.stream()
                      .capture(
                          () -> k.siluMul(s.stream(), out.ptr(), n, a.ptr(), a.ptr(), n, 1, n));
              CudaGraph g2 =
                  s.stream()
                      .capture(
                          () -> k.siluMul(s.stream(), out.ptr(), n, b.ptr(), b.ptr(), n, 1, n));
              CudaEvent start = CudaEvent.create();
              CudaEvent end = CudaEvent.create()) {
            start.record(s.stream());
            g.launch(s.stream());
            end.record(s.stream());
            end.synchronize();
            assertThat(end.millisSince(start)).isGreaterThanOrEqualTo(0f);
            Compare.assertClose("graph replay", s.read(out, n), siluSquare(in1), 1e-6);
            out.poison(s.stream());
            assertThat(g.updateFrom(g2)).isTrue();
            g.launch(s.stream());
            Compare.assertClose("updated graph", s.read(out, n), siluSquare(in2), 1e-6);
          }
        });
  }

  private static float[] siluSquare(float[] x) {
    float[] y = new float[x.length];
    for (int i = 0; i < x.length; i++) {
      float g = x[i];
      y[i] = (g / (1f + (float) Math.exp(-g))) * g;
    }
    return y;
  }
}
