package dev.ringmaster.backend.cpu.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A tiny run of the benchmark: every case reported, with the fields the CLI prints. */
class CpuMatmulBenchmarkTest {
  @Test
  void reportsEveryCaseAsTableAndJson() {
    int nativeBits = CpuKernelContext.preferredVectorBits();
    CpuMatmulBenchmark.Options options =
        new CpuMatmulBenchmark.Options(
            List.of(128, nativeBits),
            List.of(WeightFormat.BF16, WeightFormat.F32, WeightFormat.FP8_BLOCK),
            List.of(CpuMatmulBenchmark.Shape.parse("96x130")),
            List.of(1, 3),
            0.01,
            64L << 20,
            false,
            2,
            false);
    CpuMatmulBenchmark.Report report = CpuMatmulBenchmark.run(options, null);
    int widths = nativeBits == 128 ? 1 : 2;
    assertThat(report.results()).hasSize(widths * 3 * 2);
    assertThat(report.threads()).isEqualTo(2);
    assertThat(report.results()).allSatisfy(r -> assertThat(r.threads()).isEqualTo(2));
    assertThat(report.memoryBandwidthGbPerSecond()).isPositive();
    assertThat(report.results())
        .allSatisfy(
            r -> {
              assertThat(r.ms()).isPositive();
              assertThat(r.gbPerSecond()).isPositive();
              assertThat(r.shape()).isEqualTo("96x130");
            });
    assertThat(CpuMatmulBenchmark.table(report)).contains("bf16", "fp8-block", "96x130");
    assertThat(CpuMatmulBenchmark.json(report))
        .contains(
            "\"memoryBandwidthGbPerSecond\"", "\"fractionOfMemoryBandwidth\"", "\"vectorBits\"");
  }

  @Test
  void timesQuantizedFormatsByEitherPath() {
    for (boolean reference : new boolean[] {false, true}) {
      CpuMatmulBenchmark.Report report =
          CpuMatmulBenchmark.run(
              new CpuMatmulBenchmark.Options(
                  List.of(128),
                  List.of(WeightFormat.FP8_TENSOR, WeightFormat.NVFP4),
                  List.of(CpuMatmulBenchmark.Shape.parse("40x64")),
                  List.of(1, 5),
                  0.01,
                  16L << 20,
                  false,
                  1,
                  reference),
              null);
      assertThat(report.referenceDequantization()).isEqualTo(reference);
      assertThat(report.results())
          .extracting(CpuMatmulBenchmark.Result::dtype)
          .containsExactly("fp8-tensor", "fp8-tensor", "nvfp4", "nvfp4");
    }
  }

  @Test
  void parsesFlags() {
    CpuMatmulBenchmark.Options o =
        CpuMatmulBenchmark.parse(
            new String[] {
              "--bits",
              "128,256",
              "--dtypes",
              "f16,nvfp4,FP8-Tensor",
              "--n",
              "1,2",
              "--shapes",
              "8x16",
              "--threads",
              "3",
              "--reference-dequantization"
            });
    assertThat(o.threads()).isEqualTo(3);
    assertThat(o.vectorBits()).containsExactly(128, 256);
    assertThat(o.dtypes())
        .containsExactly(WeightFormat.F16, WeightFormat.NVFP4, WeightFormat.FP8_TENSOR);
    assertThat(o.referenceDequantization()).isTrue();
    assertThat(o.tokens()).containsExactly(1, 2);
    assertThat(o.shapes()).containsExactly(new CpuMatmulBenchmark.Shape(8, 16));
  }
}
