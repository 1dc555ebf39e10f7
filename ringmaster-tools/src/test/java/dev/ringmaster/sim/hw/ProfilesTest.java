package dev.ringmaster.sim.hw;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProfilesTest {

  @Test
  void everyBuiltInProfileLoadsWithSources() {
    for (String name : Profiles.BUILT_IN) {
      HardwareProfile p = Profiles.load(name);
      assertThat(p.name()).isEqualTo(name);
      assertThat(p.sources()).isNotEmpty();
      assertThat(p.gpu().memoryBandwidth()).isPositive();
      assertThat(p.interconnect().gpuSocket()).hasSize(p.gpuCount());
    }
  }

  @Test
  void rtxPro6000IsPcieAcrossTwoSockets() {
    Interconnect ic = Profiles.load("rtx-pro-6000-x8").interconnect();
    assertThat(ic.path(0, 1)).isEqualTo(Interconnect.Path.SAME_SWITCH);
    assertThat(ic.path(0, 2)).isEqualTo(Interconnect.Path.SAME_SOCKET);
    assertThat(ic.path(0, 5)).isEqualTo(Interconnect.Path.CROSS_SOCKET);
    // 4 x 4 GPU pairs cross the socket link in each direction.
    assertThat(ic.crossSocketBytesAllToAll(8, 1.0)).isEqualTo(16.0);
  }

  @Test
  void ncclModelReproducesTheMeasuredTable() {
    CollectiveModel m = new CollectiveModel(Profiles.load("rtx-pro-6000-x8"));
    // aiconfigurator NCCL 2.29.2 table, 8 GPUs fp16: 24.6 us at 512 B, 221 us at 2 MiB, 1248 us at
    // 16 MiB.
    assertThat(m.allreduce(AllreduceAlgorithm.NCCL, 512, 8).timeUs()).isCloseTo(24.6, within(2.5));
    assertThat(m.allreduce(AllreduceAlgorithm.NCCL, 2 << 20, 8).timeUs())
        .isCloseTo(221, within(22.0));
    assertThat(m.allreduce(AllreduceAlgorithm.NCCL, 16 << 20, 8).timeUs())
        .isCloseTo(1248, within(125.0));
  }

  @Test
  void oneShotContendsOnPcieButNotOnNvlink() {
    CollectiveModel pcie = new CollectiveModel(Profiles.load("rtx-pro-6000-x8"));
    double bytes = 8 * 6144 * 2; // GLM-5 hidden state of 8 tokens
    double ring = pcie.allreduce(AllreduceAlgorithm.RING, bytes, 8).timeUs();
    double oneShot = pcie.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs();
    assertThat(oneShot).isGreaterThan(1.5 * ring);
    assertThat(pcie.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).how()).contains("PCIe tree");
    CollectiveModel nvl = new CollectiveModel(Profiles.load("h200-x8"));
    assertThat(nvl.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs())
        .isLessThan(nvl.allreduce(AllreduceAlgorithm.NCCL, bytes, 8).timeUs());
  }

  @Test
  void saveAndLoadRoundTrip(@TempDir Path dir) throws Exception {
    HardwareProfile p = Profiles.load("h200-x8");
    Path f = dir.resolve("p.json");
    Profiles.save(p, f);
    assertThat(Files.readString(f)).contains("\"memory_bandwidth\"");
    assertThat(Profiles.load(f.toString())).isEqualTo(p);
  }
}
