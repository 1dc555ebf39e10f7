package dev.ringmaster.sim.hw;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PeerFabricModelTest {
  private static final HardwareProfile PCIE = Profiles.load("rtx-pro-6000-x8");

  @Test
  void maxMinFairnessSharesABottleneckAndSpeedsUpTheFlowsLeft() {
    FlowNetwork net = new FlowNetwork();
    net.link("a", 10);
    net.link("b", 100);
    // two flows share link a (5 each); the third alone on b is capped at 20
    net.flow(10, 1e9, List.of("a"));
    net.flow(20, 1e9, List.of("a", "b"));
    net.flow(40, 20, List.of("b"));
    // the 10-byte flow ends at 2 s; the 20-byte one then has all of a: 10 more bytes in 1 s
    assertThat(net.makespanSeconds()).isCloseTo(3.0, within(1e-9));
  }

  @Test
  void ncclRingBeatsOneShotAndTwoShotAtLargeDecodeMessagesOnEightPcieGpus() {
    CollectiveModel m = new CollectiveModel(PCIE);
    // GLM-5 hidden 6144 in bf16 at batch 32 and 128: 384 KiB and 1.5 MiB per allreduce
    for (double bytes : new double[] {384 << 10, 1536 << 10}) {
      double ring = m.allreduce(AllreduceAlgorithm.RING, bytes, 8).timeUs();
      assertThat(m.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs())
          .as("one-shot at %.0f B", bytes)
          .isGreaterThan(1.5 * ring);
    }
    // two-shot reads 1/8 as much per peer: slower than the ring only once the reads stream
    double big = 1536 << 10;
    assertThat(m.allreduce(AllreduceAlgorithm.TWOSHOT, big, 8).timeUs())
        .isGreaterThan(m.allreduce(AllreduceAlgorithm.RING, big, 8).timeUs());
  }

  @Test
  void oneShotWinsAtSmallMessagesOnNvlink() {
    CollectiveModel m = new CollectiveModel(Profiles.load("h200-x8"));
    double bytes = 2.0 * 6144;
    assertThat(m.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs())
        .isLessThan(m.allreduce(AllreduceAlgorithm.RING, bytes, 8).timeUs());
  }

  @Test
  void fewerSwitchesMakeOneShotSlowerNotFaster() {
    double bytes = 1536 << 10;
    double spread =
        new CollectiveModel(PCIE).allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs();
    // all eight GPUs on socket 0 under two switches: no socket link, but four GPUs per uplink
    Interconnect ic = PCIE.interconnect();
    Interconnect packed =
        new Interconnect(
            ic.type(),
            ic.pcieGen(),
            ic.pcieLanes(),
            ic.linkBandwidth(),
            List.of(0, 0, 0, 0, 0, 0, 0, 0),
            List.of(0, 0, 0, 0, 1, 1, 1, 1),
            ic.crossSocketBandwidth(),
            ic.peerReadEfficiency(),
            ic.peerSyncUs(),
            ic.pcieFabric());
    HardwareProfile p =
        new HardwareProfile(
            "packed", "", List.of(), List.of(), 8, PCIE.gpu(), packed, PCIE.collectives());
    CollectiveModel m = new CollectiveModel(p);
    double one = m.allreduce(AllreduceAlgorithm.ONESHOT, bytes, 8).timeUs();
    assertThat(one).isGreaterThan(m.allreduce(AllreduceAlgorithm.NCCL, bytes, 8).timeUs());
    // the switch uplinks carry 4 GPUs x 4 outside peers of traffic each way: the bound, reached
    // within a few percent (the read window slows the last flows)
    PeerFabricModel f = new PeerFabricModel(packed);
    double uplinkBound = 16 * bytes / ic.pcieFabric().switchUplinkBandwidth();
    assertThat(f.transferSeconds(bytes, 8))
        .isGreaterThanOrEqualTo(uplinkBound * (1 - 1e-9))
        .isLessThan(uplinkBound * 1.05);
    assertThat(spread).isGreaterThan(0);
  }

  @Test
  void barrierCostGrowsWithPeersAndPath() {
    PeerFabricModel f = new PeerFabricModel(PCIE.interconnect());
    // two GPUs under one switch: one round trip there; eight across sockets: the SYS round trip
    assertThat(f.barrierUs(2, 1)).isLessThan(f.barrierUs(4, 1));
    assertThat(f.barrierUs(4, 1)).isLessThan(f.barrierUs(8, 1));
    assertThat(f.barrierUs(8, 128)).isGreaterThan(f.barrierUs(8, 1));
    assertThat(f.maxRttUs(8)).isEqualTo(7.39);
    // a barrier is posted flag writes: far cheaper than one read round trip
    assertThat(f.barrierUs(8, 3)).isLessThan(f.maxRttUs(8) / 4);
  }

  @Test
  void stagedPeerAccessIsReported() {
    PcieFabric fab = PCIE.interconnect().pcieFabric();
    var paths = new java.util.HashMap<>(fab.paths());
    paths.put("SYS", new PcieFabric.PathClass(1e10, 5, 0.5, "staged"));
    Interconnect ic = PCIE.interconnect();
    Interconnect staged =
        new Interconnect(
            ic.type(),
            ic.pcieGen(),
            ic.pcieLanes(),
            ic.linkBandwidth(),
            ic.gpuSocket(),
            ic.gpuSwitch(),
            ic.crossSocketBandwidth(),
            ic.peerReadEfficiency(),
            ic.peerSyncUs(),
            new PcieFabric(
                paths, fab.switchUplinkBandwidth(), fab.readWindowBytes(), fab.flagWriteNs()));
    PeerFabricModel f = new PeerFabricModel(staged);
    assertThat(f.directPeerAccess(4)).isTrue();
    assertThat(f.directPeerAccess(8)).isFalse();
    assertThat(new ArrayList<>(paths.keySet())).contains("PIX", "NODE", "SYS");
  }
}
