package dev.ringmaster.sim.hw;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProfileValidationTest {
  @Test
  void emptyProfileIsRejectedWithWhatItLacks(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("empty.json");
    Files.writeString(f, "{}");
    assertThatThrownBy(() -> Profiles.load(f.toString()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs a \"name\"");
  }

  @Test
  void misspeltFieldIsNamed(@TempDir Path dir) throws Exception {
    String good = Profiles.toJson(Profiles.load("rtx-pro-6000-x8"));
    assertThat(good).contains("\"peer_sync_us\"");
    Path f = dir.resolve("typo.json");
    Files.writeString(f, good.replace("\"peer_sync_us\"", "\"peer_synch_us\""));
    assertThatThrownBy(() -> Profiles.load(f.toString()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown field \"peer_synch_us\"");
  }

  @Test
  void everyBuiltInProfileRoundTrips(@TempDir Path dir) throws Exception {
    for (String name : Profiles.BUILT_IN) {
      Path f = dir.resolve(name + ".json");
      Profiles.save(Profiles.load(name), f);
      assertThat(Profiles.load(f.toString()).name()).isEqualTo(name);
    }
  }
}
