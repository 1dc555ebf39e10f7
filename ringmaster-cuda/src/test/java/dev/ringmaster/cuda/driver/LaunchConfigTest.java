package dev.ringmaster.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import org.junit.jupiter.api.Test;

/**
 * The {@code cuLaunchKernelEx} structs against {@code cuda.h}. The expected numbers are those a C
 * compiler gives for the CUDA 13.0 header ({@code sizeof} / {@code offsetof} / {@code _Alignof} on
 * x86-64); CUDA 12's header declares the same structs (the value union has been {@code char
 * pad[64]} since 12.0, the attribute's {@code char pad[8 - sizeof(CUlaunchAttributeID)]} too). Runs
 * without a GPU: the config is plain native memory.
 */
class LaunchConfigTest {
  private static long offset(StructLayout s, String field) {
    return s.byteOffset(MemoryLayout.PathElement.groupElement(field));
  }

  @Test
  void layoutsMatchTheHeader() {
    assertThat(LaunchConfig.ATTRIBUTE_VALUE.byteSize()).isEqualTo(64);
    assertThat(LaunchConfig.ATTRIBUTE_VALUE.byteAlignment()).isEqualTo(8);
    assertThat(offset(LaunchConfig.ATTRIBUTE_VALUE, "programmaticStreamSerializationAllowed"))
        .isZero();

    assertThat(LaunchConfig.ATTRIBUTE.byteSize()).isEqualTo(72);
    assertThat(LaunchConfig.ATTRIBUTE.byteAlignment()).isEqualTo(8);
    assertThat(offset(LaunchConfig.ATTRIBUTE, "id")).isZero();
    assertThat(offset(LaunchConfig.ATTRIBUTE, "value")).isEqualTo(8);

    StructLayout c = LaunchConfig.CONFIG;
    assertThat(c.byteSize()).isEqualTo(56);
    assertThat(c.byteAlignment()).isEqualTo(8);
    String[] ints = {
      "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ", "sharedMemBytes"
    };
    for (int i = 0; i < ints.length; i++) {
      assertThat(offset(c, ints[i])).as(ints[i]).isEqualTo(4L * i);
    }
    assertThat(offset(c, "hStream")).isEqualTo(32);
    assertThat(offset(c, "attrs")).isEqualTo(40);
    assertThat(offset(c, "numAttrs")).isEqualTo(48);

    assertThat(LaunchConfig.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).isEqualTo(6);
  }

  @Test
  void setWritesTheFieldsWhereTheDriverReadsThem() {
    LaunchConfig cfg = new LaunchConfig();
    cfg.set(7, 3, 2, 256, 1, 1, 4096, 0x1234_5678_9abcL);
    MemorySegment s = cfg.segment();
    assertThat(s.byteSize()).isEqualTo(56);
    int[] expected = {7, 3, 2, 256, 1, 1, 4096};
    for (int i = 0; i < expected.length; i++) {
      assertThat(s.get(JAVA_INT, 4L * i)).as("int field " + i).isEqualTo(expected[i]);
    }
    assertThat(s.get(JAVA_LONG, 32)).isEqualTo(0x1234_5678_9abcL);
    MemorySegment attrs = s.get(ADDRESS, 40);
    assertThat(attrs.address()).isEqualTo(cfg.attributes().address());
    assertThat(s.get(JAVA_INT, 48)).isEqualTo(1);

    MemorySegment a = cfg.attributes();
    assertThat(a.byteSize()).isEqualTo(72);
    assertThat(a.get(JAVA_INT, 0)).isEqualTo(6); // PROGRAMMATIC_STREAM_SERIALIZATION
    assertThat(a.get(JAVA_INT, 8)).isEqualTo(1); // programmaticStreamSerializationAllowed
    for (long b = 12; b < 72; b++) {
      assertThat(a.get(JAVA_BYTE, b)).as("union byte " + b).isZero();
    }

    // A second launch rewrites the geometry in place and leaves the attribute alone.
    cfg.set(1, 1, 1, 32, 1, 1, 0, 0);
    assertThat(s.get(JAVA_INT, 0)).isEqualTo(1);
    assertThat(s.get(JAVA_INT, 12)).isEqualTo(32);
    assertThat(s.get(JAVA_INT, 24)).isZero();
    assertThat(s.get(JAVA_LONG, 32)).isZero();
    assertThat(s.get(ADDRESS, 40).address()).isEqualTo(a.address());
  }
}
