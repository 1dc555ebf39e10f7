package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.DType;
import dev.ringmaster.runtime.KernelTuning;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class CpuKernelContextTest {
  private static final int CORES = Runtime.getRuntime().availableProcessors();

  @Test
  void ofTakesWidthAndThreadsFromTheTuning() {
    try (CpuKernelContext k =
        CpuKernelContext.of(
            KernelTuning.defaults().with("cpu-vector-bits", 128).with("cpu-threads", 3))) {
      assertThat(k).isNotSameAs(CpuKernelContext.shared());
      assertThat(k.vectorBits()).isEqualTo(128);
      assertThat(k.threads()).isEqualTo(3);
    }
  }

  @Test
  void defaultTuningGetsTheSharedContext() {
    CpuKernelContext k = CpuKernelContext.of(KernelTuning.defaults());
    assertThat(k).isSameAs(CpuKernelContext.shared());
    assertThat(k.vectorBits()).isEqualTo(CpuKernelContext.preferredVectorBits());
    assertThat(k.threads()).isEqualTo(CORES);
  }

  @Test
  void closingTheSharedContextLeavesItRunning() {
    CpuKernelContext.shared().close();
    AtomicInteger ran = new AtomicInteger();
    CpuKernelContext.shared().parallelFor(2 * CORES, i -> ran.incrementAndGet());
    assertThat(ran).hasValue(2 * CORES);
  }

  @Test
  void contextsKeepTheirOwnWidthSideBySide() {
    try (CpuKernelContext narrow = new CpuKernelContext(128, 1);
        CpuKernelContext wide = new CpuKernelContext(512, 1)) {
      assertThat(narrow.kernel(DType.BF16).lanes()).isEqualTo(4);
      assertThat(wide.kernel(DType.F16).lanes()).isEqualTo(16);
      assertThat(narrow.kernel(DType.BF16).lanes()).isEqualTo(4);
    }
    try (CpuKernelContext preferred = new CpuKernelContext(0, 0)) {
      assertThat(preferred.vectorBits()).isEqualTo(CpuKernelContext.preferredVectorBits());
      assertThat(preferred.threads()).isEqualTo(CORES);
    }
  }

  @Test
  void badSettingsAreRefused() {
    assertThatThrownBy(() -> new CpuKernelContext(64, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("128, 256 or 512");
    assertThatThrownBy(() -> new CpuKernelContext(0, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("threads");
  }

  @Test
  void aClosedContextRefusesParallelWork() {
    CpuKernelContext k = new CpuKernelContext(0, 2);
    k.close();
    assertThatThrownBy(() -> k.parallelFor(4, i -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }
}
