package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.runtime.KernelTuning;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class CpuKernelsConfigTest {
  @AfterAll
  static void restoreDefaults() {
    CpuKernels.setVectorBits(0);
  }

  @Test
  void applyTakesWidthAndThreadsFromTheTuning() {
    int threads = CpuKernels.threads();
    try {
      CpuKernels.apply(KernelTuning.defaults().with("cpu-vector-bits", 128).with("cpu-threads", 3));
      assertThat(CpuKernels.vectorBits()).isEqualTo(128);
      assertThat(CpuKernels.threads()).isEqualTo(3);
      CpuKernels.apply(KernelTuning.defaults());
      assertThat(CpuKernels.vectorBits()).isEqualTo(CpuKernels.preferredVectorBits());
      assertThat(CpuKernels.threads()).isEqualTo(Runtime.getRuntime().availableProcessors());
    } finally {
      CpuKernels.setThreads(threads);
    }
  }

  @Test
  void setVectorBitsSelectsKernelWidth() {
    CpuKernels.setVectorBits(128);
    assertThat(CpuKernels.vectorBits()).isEqualTo(128);
    assertThat(CpuKernels.kernel(dev.ringmaster.backend.DType.BF16).lanes()).isEqualTo(4);
    CpuKernels.setVectorBits(512);
    assertThat(CpuKernels.kernel(dev.ringmaster.backend.DType.F16).lanes()).isEqualTo(16);
    CpuKernels.setVectorBits(0);
    assertThat(CpuKernels.vectorBits()).isEqualTo(CpuKernels.preferredVectorBits());
    assertThatThrownBy(() -> CpuKernels.setVectorBits(64))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
