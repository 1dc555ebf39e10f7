package dev.ringmaster.backend.cpu.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
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
            List.of(DType.BF16, DType.F32),
            List.of(CpuMatmulBenchmark.Shape.parse("96x130")),
            List.of(1, 3),
            0.01,
            64L << 20,
            false,
            2);
    CpuMatmulBenchmark.Report report = CpuMatmulBenchmark.run(options, null);
    int widths = nativeBits == 128 ? 1 : 2;
    assertThat(report.results()).hasSize(widths * 2 * 2);
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
    assertThat(CpuMatmulBenchmark.table(report)).contains("bf16", "96x130");
    assertThat(CpuMatmulBenchmark.json(report))
        .contains(
            "\"memoryBandwidthGbPerSecond\"", "\"fractionOfMemoryBandwidth\"", "\"vectorBits\"");
  }

  @Test
  void parsesFlags() {
    CpuMatmulBenchmark.Options o =
        CpuMatmulBenchmark.parse(
            new String[] {
              "--bits",
              "128,256",
              "--dtypes",
              "f16",
              "--n",
              "1,2",
              "--shapes",
              "8x16",
              "--threads",
              "3"
            });
    assertThat(o.threads()).isEqualTo(3);
    assertThat(o.vectorBits()).containsExactly(128, 256);
    assertThat(o.dtypes()).containsExactly(DType.F16);
    assertThat(o.tokens()).containsExactly(1, 2);
    assertThat(o.shapes()).containsExactly(new CpuMatmulBenchmark.Shape(8, 16));
  }
}
