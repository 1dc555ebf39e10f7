package dev.ringmaster.cuda.collective;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.testing.FakeTopology;
import dev.ringmaster.cuda.topology.Link;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The measured-table cache: hit on the same key, stale when GPUs, driver or links change. */
class AllReduceTableCacheTest {
  @TempDir Path dir;

  private static AllReduceTableCache.Entry entry(String key) {
    DeviceAllReduceTable t =
        new DeviceAllReduceTable(
            List.of(new DeviceAllReduceTable.Step(65536, AllReduceAlgorithm.ONESHOT)));
    return new AllReduceTableCache.Entry(
        key,
        t,
        List.of(new AllReduceRule.Measurement(65536, AllReduceAlgorithm.ONESHOT, 7.5)),
        List.of("65536 B -> ONESHOT"));
  }

  @Test
  void storedTableIsFoundUnderTheSameKey() throws Exception {
    AllReduceTableCache cache = new AllReduceTableCache(dir.resolve("ringmaster"));
    String key = FakeTopology.fake(2, Link.NVLINK, 18, "580.159.04").signature() + "|world=2";
    assertThat(cache.lookup(2, key)).isInstanceOf(AllReduceTableCache.Miss.class);
    cache.store(2, entry(key));
    var hit = (AllReduceTableCache.Hit) cache.lookup(2, key);
    assertThat(hit.entry()).isEqualTo(entry(key));
    assertThat(hit.entry().table().select(1000)).isEqualTo(AllReduceAlgorithm.ONESHOT);
  }

  @Test
  void aChangedDriverOrTopologyInvalidates() throws Exception {
    AllReduceTableCache cache = new AllReduceTableCache(dir);
    String old = FakeTopology.fake(2, Link.NVLINK, 18, "580.1").signature();
    cache.store(2, entry(old));
    String newDriver = FakeTopology.fake(2, Link.NVLINK, 18, "590.1").signature();
    String newLinks = FakeTopology.fake(2, Link.PHB, 0, "580.1").signature();
    for (String key : List.of(newDriver, newLinks)) {
      var miss = (AllReduceTableCache.Miss) cache.lookup(2, key);
      assertThat(miss.reason()).contains("stale");
    }
    assertThat(cache.lookup(4, old))
        .isInstanceOf(AllReduceTableCache.Miss.class); // other world size
  }

  @Test
  void anUnreadableFileIsAMissNotACrash() throws Exception {
    AllReduceTableCache cache = new AllReduceTableCache(dir);
    Files.writeString(cache.file(2), "{not json");
    assertThat(((AllReduceTableCache.Miss) cache.lookup(2, "k")).reason()).contains("unreadable");
  }
}
