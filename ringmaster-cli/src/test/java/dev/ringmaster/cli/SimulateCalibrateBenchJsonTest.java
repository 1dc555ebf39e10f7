package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.hw.Profiles;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code simulate calibrate} takes what {@code bench collectives --json} prints, unconverted. */
class SimulateCalibrateBenchJsonTest {

  @Test
  void cpuBenchCollectivesJsonCalibrates(@TempDir Path dir) throws Exception {
    CliTest.Run bench =
        CliTest.run(
            "bench",
            "collectives",
            "--device",
            "cpu",
            "--world-size",
            "2",
            "--max-bytes",
            "65536",
            "--iters",
            "3",
            "--json");
    assertThat(bench.status()).as(bench.err()).isZero();
    Path json = dir.resolve("coll.json");
    Files.writeString(json, bench.out());
    Path out = dir.resolve("cpu.json");
    CliTest.Run r =
        CliTest.run(
            "simulate",
            "calibrate",
            "--measurements",
            json.toString(),
            "--base-profile",
            "h200-x8",
            "--output",
            out.toString());
    // parsing and fitting is the claim; a 2-core box's CPU timings say nothing about the GPU
    assertThat(r.status()).as(r.err()).isZero();
    assertThat(r.out()).contains("peer allreduce");
    assertThat(Profiles.load(out.toString()).name()).isEqualTo("h200-x8-calibrated");
  }
}
