package dev.ringmaster.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.cuda.kernels.KernelImage;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Runs everywhere, CI included: the build's kernel record and the probe on this machine. */
class CudaRuntimeTest {
  @Test
  void kernelsAreOnTheClasspathExactlyWhenNvccBuiltThem() {
    String nvcc = KernelImage.nvccVersion();
    if (nvcc.equals("absent")) {
      assertThat(KernelImage.isBuilt()).isFalse();
      assertThatThrownBy(KernelImage::load).hasMessageContaining("install the CUDA toolkit");
    } else {
      assertThat(KernelImage.isBuilt()).isTrue();
      byte[] fatbin = KernelImage.load();
      // A fatbin container starts with the magic 0xBA55ED50 (little-endian).
      int magic = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
      assertThat(magic).isEqualTo(0xBA55ED50);
      // Each entry's header names the source it was compiled from, in plain text even where nvcc
      // compresses the code (its default does once the image passes some size, and the kernel
      // names are then no longer readable here: RingmasterKernels looks every kernel up by name
      // when a GPU test loads the image).
      String text = new String(fatbin, StandardCharsets.ISO_8859_1);
      assertThat(text).contains("ringmaster_kernels.cu");
    }
  }

  @Test
  void probeGivesAReasonInsteadOfCrashing() {
    CudaProbe p = CudaRuntime.probe();
    assertThat(p).isNotNull();
    if (p.available()) {
      assertThat(p.devices()).isNotEmpty();
      assertThat(p.reason()).isEmpty();
    } else {
      // On a machine without a GPU or driver: a sentence that says what is missing.
      assertThat(p.reason()).isNotBlank();
      assertThat(p.summary()).startsWith("CUDA unavailable: ");
      assertThat(p.reason()).containsAnyOf("driver", "GPU", "nvcc");
    }
    System.out.println(p.summary());
  }
}
