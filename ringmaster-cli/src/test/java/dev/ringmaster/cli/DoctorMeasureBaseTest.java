package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.tools.doctor.GpuFacts;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Which built-in profile {@code doctor --measure} fits from, and what it says it borrows. */
class DoctorMeasureBaseTest {
  private static List<GpuFacts.Gpu> gpus(String name, int n) {
    return IntStream.range(0, n)
        .mapToObj(
            i ->
                new GpuFacts.Gpu(
                    i, name, 9, 0, 132, 150L << 30, 149L << 30, 1980, 3201, "", 0, "", 0))
        .toList();
  }

  @Test
  void theGpuFamilyPicksTheBase() {
    assertThat(DoctorMeasure.baseFor(gpus("NVIDIA H200", 1))).isEqualTo("h200");
    assertThat(DoctorMeasure.baseFor(gpus("NVIDIA H200", 8))).isEqualTo("h200-x8");
    assertThat(DoctorMeasure.baseFor(gpus("NVIDIA H100 80GB HBM3", 8))).isEqualTo("h100-sxm-x8");
    assertThat(DoctorMeasure.baseFor(gpus("NVIDIA RTX PRO 6000 Blackwell Server Edition", 8)))
        .isEqualTo("rtx-pro-6000-x8");
    assertThat(DoctorMeasure.baseFor(gpus("NVIDIA L40S", 2))).isEqualTo("h200-x8");
  }

  @Test
  void whatTheBaseBorrowsIsSaid() {
    assertThat(DoctorMeasure.baseNote(gpus("NVIDIA H200", 1))).isEmpty();
    assertThat(DoctorMeasure.baseNote(gpus("NVIDIA H200", 8))).isEmpty();
    assertThat(DoctorMeasure.baseNote(gpus("NVIDIA H200", 4)).orElseThrow())
        .contains("GPU count (8)", "this host has 4", "--base-profile");
    assertThat(DoctorMeasure.baseNote(gpus("NVIDIA L40S", 1)).orElseThrow())
        .contains("no built-in profile for NVIDIA L40S", "h200's");
  }
}
