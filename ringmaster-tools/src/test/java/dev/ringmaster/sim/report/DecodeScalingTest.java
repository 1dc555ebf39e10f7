package dev.ringmaster.sim.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DecodeScalingTest {
  private static Path run(
      Path dir, String name, int tp, int ep, String ar, String extra, double tps1, double tps8)
      throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(
        f,
        "{\"model\":\"random V2-Lite shape (configs/x.json)\",\"device\":\"cuda\",\"tp_size\":"
            + tp
            + ",\"ep_size\":"
            + ep
            + ",\"allreduce\":\""
            + ar
            + "\""
            + extra
            + ",\"results\":[{\"batch_size\":1,\"decode_median_ms\":"
            + (1000 / tps1)
            + ",\"decode_tokens_per_s\":"
            + tps1
            + ",\"prefill_tokens_per_s\":100},{\"batch_size\":8,\"decode_median_ms\":"
            + (8000 / tps8)
            + ",\"decode_tokens_per_s\":"
            + tps8
            + ",\"prefill_tokens_per_s\":200}]}");
    return f;
  }

  @Test
  void bestPerGpuCountAndSpeedUpOverOneGpu(@TempDir Path dir) throws Exception {
    List<DecodeScaling.Run> runs =
        List.of(
            DecodeScaling.read(run(dir, "a.json", 1, 1, "auto", "", 250, 1000)),
            DecodeScaling.read(run(dir, "b.json", 4, 1, "nccl", "", 300, 1500)),
            DecodeScaling.read(run(dir, "c.json", 4, 1, "oneshot", "", 320, 1450)),
            DecodeScaling.read(
                run(
                    dir,
                    "d.json",
                    4,
                    4,
                    "auto",
                    ",\"moe_a2a_backend\":\"all-to-all\"",
                    200,
                    1200)));
    assertThat(runs.get(0).layout()).isEqualTo("TP 1");
    assertThat(runs.get(1).layout()).isEqualTo("TP 4 nccl");
    assertThat(runs.get(3).layout()).isEqualTo("EP 4 all-to-all");
    assertThat(runs.get(0).modelName()).isEqualTo("random V2-Lite shape");
    var best = DecodeScaling.best(runs).get("random V2-Lite shape");
    // batch 1: oneshot's 320 is the best at 4 GPUs; batch 8: nccl's 1500
    assertThat(best.get(1)).containsEntry(1, 250.0).containsEntry(4, 320.0);
    assertThat(best.get(8)).containsEntry(4, 1500.0);
    String t = DecodeScaling.table(runs);
    assertThat(t).contains("| random V2-Lite shape | TP 4 oneshot | 3.13 ms (320 tok/s) |");
    assertThat(t).contains("| random V2-Lite shape | 1 | 1: 250 (1.00x), 4: 320 (1.28x) |");
    assertThat(t).contains("| random V2-Lite shape | 8 | 1: 1000 (1.00x), 4: 1500 (1.50x) |");
    Path png = dir.resolve("s.png");
    DecodeScaling.plot(runs, png);
    byte[] head = Files.readAllBytes(png);
    assertThat(head.length).isGreaterThan(1000);
    assertThat(new String(head, 1, 3, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("PNG");
  }

  @Test
  void aFileWithoutResultsIsRefusedByName(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("x.json");
    Files.writeString(f, "[{\"op\":\"ALL_REDUCE\"}]");
    assertThatThrownBy(() -> DecodeScaling.read(f))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("x.json")
        .hasMessageContaining("not bench one-batch JSON");
  }
}
