package dev.ringmaster.cuda.topology;

import static dev.ringmaster.cuda.testing.FakeTopology.fake;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The topology record on fake inputs: matrix text, PCIe-only detection, cache signature. */
class GpuTopologyTest {
  @Test
  void formatsLikeNvidiaSmi() {
    String m = fake(2, Link.NVLINK, 18, "580.159.04").format();
    assertThat(m).contains("GPU0").contains("NV18").contains("X").contains("580.159.04");
    assertThat(fake(4, Link.SYS, 0, "580").format()).contains("SYS");
  }

  @Test
  void oneGpuSaysThereAreNoLinksInsteadOfAMatrixOfSelf() {
    String m = fake(1, Link.SELF, 0, "580.159.04").format();
    assertThat(m)
        .startsWith("GPU0  NVIDIA H200  ")
        .contains("the only GPU, so no links or peer access between GPUs to show")
        .contains("driver 580.159.04")
        .doesNotContain("Legend")
        .doesNotContain("cuDeviceCanAccessPeer");
    assertThat(m.lines()).hasSize(2);
  }

  @Test
  void pcieOnlyMeansNoNvLinkPair() {
    assertThat(fake(4, Link.PXB, 0, "580").pcieOnly()).isTrue();
    assertThat(fake(4, Link.NVLINK, 4, "580").pcieOnly()).isFalse();
    assertThat(fake(1, Link.SELF, 0, "580").pcieOnly()).isTrue();
  }

  @Test
  void signatureChangesWithDriverLinksOrPeerAccess() {
    GpuTopology a = fake(2, Link.NVLINK, 18, "580.1");
    assertThat(a.signature()).isEqualTo(fake(2, Link.NVLINK, 18, "580.1").signature());
    assertThat(a.signature()).isNotEqualTo(fake(2, Link.NVLINK, 18, "580.2").signature());
    assertThat(a.signature()).isNotEqualTo(fake(2, Link.PIX, 0, "580.1").signature());
    GpuTopology noPeer = fake(2, Link.NVLINK, 18, "580.1");
    noPeer.peerAccess()[0][1] = false;
    assertThat(noPeer.signature()).isNotEqualTo(a.signature());
    assertThat(noPeer.allPeerAccess(2)).isFalse();
  }

  @Test
  void firstKeepsTheSubmatrix() {
    GpuTopology t = fake(4, Link.PHB, 0, "580").first(2);
    assertThat(t.gpuCount()).isEqualTo(2);
    assertThat(t.label(0, 1)).isEqualTo("PHB");
  }

  @Test
  void summaryNamesGpusLinksAndDriverOnOneLine() {
    assertThat(fake(4, Link.NVLINK, 18, "580.159.04").summary())
        .isEqualTo("4x NVIDIA H200, NV18 between every pair, driver 580.159.04");
    assertThat(fake(2, Link.NVLINK, 18, "580").summary())
        .isEqualTo("2x NVIDIA H200, NV18 between them, driver 580");
    assertThat(fake(1, Link.SELF, 0, "580").summary()).isEqualTo("1x NVIDIA H200, driver 580");
    GpuTopology mixed = fake(3, Link.PIX, 0, "580");
    mixed.links()[1][2] = Link.SYS;
    mixed.links()[2][1] = Link.SYS;
    assertThat(mixed.summary())
        .isEqualTo("3x NVIDIA H200, links 0-1 PIX, 0-2 PIX, 1-2 SYS, driver 580");
  }

  @Test
  void busIdsAreNormalisedBetweenCudaAndNvml() {
    assertThat(GpuTopology.normalizeBusId("00000000:19:00.0")).isEqualTo("0000:19:00.0");
    assertThat(GpuTopology.normalizeBusId("0000:1A:00.0")).isEqualTo("0000:1a:00.0");
  }

  @Test
  void nvmlLevelsMapToLinks() {
    assertThat(Link.ofNvmlLevel(10)).isEqualTo(Link.PIX);
    assertThat(Link.ofNvmlLevel(20)).isEqualTo(Link.PXB);
    assertThat(Link.ofNvmlLevel(30)).isEqualTo(Link.PHB);
    assertThat(Link.ofNvmlLevel(40)).isEqualTo(Link.NODE);
    assertThat(Link.ofNvmlLevel(50)).isEqualTo(Link.SYS);
  }
}
