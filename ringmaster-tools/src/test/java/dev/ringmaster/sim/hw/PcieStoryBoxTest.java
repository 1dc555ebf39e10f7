package dev.ringmaster.sim.hw;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.ServingConfig;
import dev.ringmaster.sim.serve.Simulator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The peer allreduces on the problem story's box (eight RTX PRO 6000 on PCIe, two sockets), from
 * the PCIe tree's sourced constants, and the same model checked against a public measurement of an
 * all-peer allreduce on a one-socket box of the same GPUs.
 */
class PcieStoryBoxTest {
  private static final HardwareProfile PCIE = Profiles.load("rtx-pro-6000-x8");

  private static double tokPerS(HardwareProfile hw, AllreduceAlgorithm algo, int batch) {
    ModelShape glm5 = Configs.load("glm5");
    ServingConfig cfg =
        new ServingConfig(
            8,
            1,
            A2aBackend.NONE,
            algo,
            QuantScheme.preset("nvfp4"),
            "bf16",
            batch,
            4096,
            true,
            512,
            8192,
            null);
    return new Simulator(hw).predict(glm5, cfg).perStreamTokensPerS();
  }

  private static HardwareProfile withTopology(List<Integer> socket, List<Integer> sw) {
    Interconnect ic = PCIE.interconnect();
    Interconnect moved =
        new Interconnect(
            ic.type(),
            ic.pcieGen(),
            ic.pcieLanes(),
            ic.linkBandwidth(),
            socket,
            sw,
            ic.crossSocketBandwidth(),
            ic.peerReadEfficiency(),
            ic.peerSyncUs(),
            ic.pcieFabric());
    return new HardwareProfile(
        "moved", "", List.of(), List.of(), 8, PCIE.gpu(), moved, PCIE.collectives());
  }

  @Test
  void peerAllreducesLoseToNcclInDecodeAtBatchOne() {
    double nccl = tokPerS(PCIE, AllreduceAlgorithm.NCCL, 1);
    // one-shot: every GPU reads 7 x 24 KiB of f32 through a 48 KiB read window at the loaded
    // round trips; two-shot: its all-gather pays the 7 round trips one after another
    assertThat(tokPerS(PCIE, AllreduceAlgorithm.ONESHOT, 1) / nccl).isLessThan(1.0);
    assertThat(tokPerS(PCIE, AllreduceAlgorithm.TWOSHOT, 1) / nccl).isLessThan(0.85);
    for (int batch : new int[] {8, 32}) {
      double n = tokPerS(PCIE, AllreduceAlgorithm.NCCL, batch);
      assertThat(tokPerS(PCIE, AllreduceAlgorithm.ONESHOT, batch) / n)
          .as("one-shot at batch %d", batch)
          .isLessThan(0.6);
    }
  }

  @Test
  void fewerSwitchesNeverMakeThePeerKernelsFasterThanNccl() {
    HardwareProfile oneSwitchPerSocket =
        withTopology(PCIE.interconnect().gpuSocket(), List.of(0, 0, 0, 0, 1, 1, 1, 1));
    for (int batch : new int[] {1, 8, 32}) {
      double nccl = tokPerS(oneSwitchPerSocket, AllreduceAlgorithm.NCCL, batch);
      for (AllreduceAlgorithm a :
          new AllreduceAlgorithm[] {AllreduceAlgorithm.ONESHOT, AllreduceAlgorithm.TWOSHOT}) {
        assertThat(tokPerS(oneSwitchPerSocket, a, batch))
            .as("%s at batch %d under one switch per socket", a, batch)
            .isLessThan(nccl)
            .isLessThanOrEqualTo(tokPerS(PCIE, a, batch) * 1.01);
      }
    }
  }

  @Test
  void oneSocketSwitchBoxMatchesThePublishedAllPeerAllreduceWithinHalf() {
    // all eight GPUs on one socket under three switches, as the published run's box; its kernel
    // stages bf16, so the bytes passed are half the message (the model stages f32)
    HardwareProfile box =
        withTopology(List.of(0, 0, 0, 0, 0, 0, 0, 0), List.of(0, 0, 0, 1, 1, 1, 2, 2));
    PeerFabricModel f = new PeerFabricModel(box.interconnect());
    double[][] measured = {{8192, 9.2}, {32768, 16.5}, {65536, 25.9}, {262144, 73.6}};
    for (double[] m : measured) {
      double us = f.allreduceUs(m[0] / 2, 8, false, PCIE.collectives().peerKernelLaunchUs());
      assertThat(us / m[1])
          .as("%.0f B: %.1f us predicted, %.1f measured", m[0], us, m[1])
          .isBetween(0.5, 1.5);
    }
    // and there, below 32 KiB, it beats the 24 us NCCL measured on that box
    assertThat(f.allreduceUs(8192 / 2.0, 8, false, 1.0)).isLessThan(24.0);
  }

  /** The profile with one {@code pcie_fabric} value replaced, through its JSON as a user would. */
  private static HardwareProfile withFabricValue(Path dir, String field, String from, String to)
      throws Exception {
    String json = Profiles.toJson(PCIE);
    String old = "\"" + field + "\" : " + from;
    assertThat(json).contains(old);
    Path f = dir.resolve(field + ".json");
    Files.writeString(f, json.replace(old, "\"" + field + "\" : " + to));
    return Profiles.load(f.toString());
  }

  /**
   * The facts the story's box would need (docs/simulate.md): with the sourced constants one-shot is
   * 1.1x NCCL's time at batch 1; a peer-read window of 16 KiB (256 outstanding 64-byte reads,
   * PCIe's 8-bit tags, against the profile's 10-bit-tag estimate of 48 KiB) makes it 2.5x, "more
   * than 2x slower" as the story measured, and still only 0.69x in decode; 0.6x needs flag writes
   * near 1 us each, a posted-write collapse of the kind reported on other PCIe boxes.
   */
  @Test
  void whatTheStorysMeasurementWouldTakeReadWindowAndFlagWrites(@TempDir Path tmp)
      throws Exception {
    double bytes = 12 * 1024; // GLM-5 decode at batch 1: one bf16 row of 6,144
    CollectiveModel sourced = new CollectiveModel(PCIE);
    double nccl = sourced.allreduce(AllreduceAlgorithm.NCCL, bytes, 8).timeUs();
    assertThat(sourced.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs() / nccl)
        .isBetween(1.0, 1.3);
    HardwareProfile tags8 = withFabricValue(tmp, "read_window_bytes", "49152", "16384");
    double oneShot8 =
        new CollectiveModel(tags8).allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs();
    assertThat(oneShot8 / nccl).isBetween(2.0, 3.0);
    double decode8 =
        tokPerS(tags8, AllreduceAlgorithm.ONESHOT, 1) / tokPerS(tags8, AllreduceAlgorithm.NCCL, 1);
    assertThat(decode8).isBetween(0.6, 0.75);
    HardwareProfile slowFlags = withFabricValue(tmp, "flag_write_ns", "20.0", "1000.0");
    double ncclSlow = tokPerS(slowFlags, AllreduceAlgorithm.NCCL, 1);
    assertThat(tokPerS(slowFlags, AllreduceAlgorithm.ONESHOT, 1) / ncclSlow).isLessThan(0.6);
    assertThat(tokPerS(slowFlags, AllreduceAlgorithm.TWOSHOT, 1) / ncclSlow).isLessThan(0.6);
  }
}
