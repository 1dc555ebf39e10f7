package dev.ringmaster.cuda.collective;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The auto-choice rule on fake facts and measurements (no GPU needed). */
class AllReduceRuleTest {
  private static final long MAX = 8 << 20;

  private static AllReduceRule.Facts facts(int n, boolean pcieOnly) {
    return new AllReduceRule.Facts(n, pcieOnly, true, false, MAX);
  }

  /** Times at 1 KiB .. 4 MiB (x4): peer kernels {@code factor} x NCCL's time. */
  private static List<AllReduceRule.Measurement> measured(
      double oneShotFactor, double twoShotFactor) {
    List<AllReduceRule.Measurement> m = new ArrayList<>();
    for (long b = 1 << 10; b <= 4 << 20; b *= 4) {
      double nccl = 10 + b / 1e4;
      m.add(new AllReduceRule.Measurement(b, AllReduceAlgorithm.NCCL, nccl));
      m.add(new AllReduceRule.Measurement(b, AllReduceAlgorithm.ONESHOT, nccl * oneShotFactor));
      m.add(new AllReduceRule.Measurement(b, AllReduceAlgorithm.TWOSHOT, nccl * twoShotFactor));
    }
    return m;
  }

  @Test
  void unmeasuredNeverPeerReadsOnMoreThanTwoPcieOnlyGpus() {
    for (int n : new int[] {3, 4, 8}) {
      AllReduceRule.Decision d = AllReduceRule.defaults(facts(n, true));
      assertThat(d.table().usesPeerMemory()).as("%d PCIe GPUs", n).isFalse();
      assertThat(d.log().getFirst()).contains("PCIe-only");
    }
    assertThat(AllReduceRule.defaults(facts(2, true)).table().usesPeerMemory()).isTrue();
    assertThat(AllReduceRule.defaults(facts(8, false)).table().select(4096))
        .isEqualTo(AllReduceAlgorithm.ONESHOT);
  }

  @Test
  void disabledOrNoPeerAccessMeansNccl() {
    var off = new AllReduceRule.Facts(2, false, true, true, MAX);
    assertThat(AllReduceRule.defaults(off).table()).isEqualTo(DeviceAllReduceTable.ncclOnly());
    assertThat(AllReduceRule.choose(off, measured(0.1, 0.1)).table().usesPeerMemory()).isFalse();
    var noPeer = new AllReduceRule.Facts(4, false, false, false, MAX);
    assertThat(AllReduceRule.defaults(noPeer).log().getFirst()).contains("peer access");
  }

  @Test
  void pcieOnlyPeerReadNeedsAClearWin() {
    // 5% faster is within noise: NCCL stays
    assertThat(AllReduceRule.choose(facts(4, true), measured(0.95, 2)).table().usesPeerMemory())
        .isFalse();
    // measured clearly faster: allowed, and the log says what NCCL took
    AllReduceRule.Decision d = AllReduceRule.choose(facts(4, true), measured(0.5, 2));
    assertThat(d.table().select(1 << 10)).isEqualTo(AllReduceAlgorithm.ONESHOT);
    assertThat(d.log().getFirst()).contains("NCCL").contains("ONESHOT");
  }

  @Test
  void nvLinkTakesTheFastestAndMergesSteps() {
    List<AllReduceRule.Measurement> m = new ArrayList<>();
    long[] sizes = {1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20};
    String[] winners = {"ONESHOT", "ONESHOT", "TWOSHOT", "TWOSHOT", "NCCL", "NCCL"};
    for (int i = 0; i < sizes.length; i++) {
      for (AllReduceAlgorithm a :
          List.of(
              AllReduceAlgorithm.NCCL, AllReduceAlgorithm.ONESHOT, AllReduceAlgorithm.TWOSHOT)) {
        m.add(new AllReduceRule.Measurement(sizes[i], a, a.name().equals(winners[i]) ? 1 : 2));
      }
    }
    DeviceAllReduceTable t = AllReduceRule.choose(facts(8, false), m).table();
    assertThat(t.steps())
        .containsExactly(
            new DeviceAllReduceTable.Step(1 << 12, AllReduceAlgorithm.ONESHOT),
            new DeviceAllReduceTable.Step(1 << 16, AllReduceAlgorithm.TWOSHOT));
    assertThat(t.select(100)).isEqualTo(AllReduceAlgorithm.ONESHOT);
    assertThat(t.select(1 << 15)).isEqualTo(AllReduceAlgorithm.TWOSHOT);
    assertThat(t.select(1 << 30)).isEqualTo(AllReduceAlgorithm.NCCL);
  }

  @Test
  void peerKernelsNeverAboveTheStagingSize() {
    var small = new AllReduceRule.Facts(2, false, true, false, 1 << 12);
    DeviceAllReduceTable t = AllReduceRule.choose(small, measured(0.5, 0.6)).table();
    assertThat(t.select(1 << 12)).isEqualTo(AllReduceAlgorithm.ONESHOT);
    assertThat(t.select(1 << 14)).isEqualTo(AllReduceAlgorithm.NCCL);
  }
}
