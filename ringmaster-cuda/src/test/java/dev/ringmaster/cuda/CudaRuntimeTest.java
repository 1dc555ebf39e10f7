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
  /** A fatbin entry's flag bit for a compressed payload. */
  private static final long FATBIN_COMPRESSED = 0x8000;

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
      // The container's entries (PTX, SASS per target) chain to its end. nvcc compresses an entry
      // past a size (the sm_90 SASS crossed it near 10 MB); every uncompressed entry names the
      // kernels in its text.
      ByteBuffer bb = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
      int headerSize = Short.toUnsignedInt(bb.getShort(6));
      long end = headerSize + bb.getLong(8);
      assertThat(end).isEqualTo(fatbin.length);
      int entries = 0;
      for (long off = headerSize; off < end; entries++) {
        int entryHeader = bb.getInt((int) off + 4);
        long payload = bb.getLong((int) off + 8);
        long flags = bb.getLong((int) off + 0x28);
        assertThat(off + entryHeader + payload).isLessThanOrEqualTo(end);
        if ((flags & FATBIN_COMPRESSED) == 0) {
          String text =
              new String(
                  fatbin, (int) off + entryHeader, (int) payload, StandardCharsets.ISO_8859_1);
          for (String kernel :
              new String[] {
                "rm_gemv_bf16", "rm_moe_gate_up", "rm_mla_decode_split", "rm_sample_rows"
              }) {
            assertThat(text).as("entry %d", entries).contains(kernel);
          }
        }
        off += entryHeader + payload;
      }
      assertThat(entries).isPositive();
      // Each entry's header names its source in plain text, compressed or not.
      assertThat(new String(fatbin, StandardCharsets.ISO_8859_1)).contains("ringmaster_kernels.cu");
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
