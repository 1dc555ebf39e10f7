package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class CpuKernelsConfigTest {
  @AfterAll
  static void restoreDefaults() {
    CpuKernels.setVectorBits(0);
  }

  @Test
  void parsesVectorWidths() {
    int preferred = CpuKernels.preferredVectorBits();
    assertThat(CpuKernels.parseVectorBits(null)).isEqualTo(preferred);
    assertThat(CpuKernels.parseVectorBits("preferred")).isEqualTo(preferred);
    assertThat(CpuKernels.parseVectorBits(" 512 ")).isEqualTo(512);
    assertThat(CpuKernels.parseVectorBits("128")).isEqualTo(128);
    assertThatThrownBy(() -> CpuKernels.parseVectorBits("64"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("128, 256 or 512");
    assertThatThrownBy(() -> CpuKernels.parseVectorBits("wide"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(CpuKernels.VECTOR_BITS_PROPERTY);
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
