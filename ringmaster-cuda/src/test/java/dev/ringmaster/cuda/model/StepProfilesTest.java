package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A step shape is profiled once between two takes: a benchmark takes after its warm-up, so its
 * timed steps (other contexts than the warm-up's, as under {@code --shared-prefix}) are profiled
 * again.
 */
class StepProfilesTest {
  @Test
  void eachShapeIsProfiledAgainAfterATake() {
    StepProfiles p = new StepProfiles();
    assertThat(p.first("decode bs=1")).isTrue();
    assertThat(p.first("decode bs=1")).isFalse();
    p.put("decode bs=1", Map.of("warm-up", 1.0));
    assertThat(p.take()).containsOnlyKeys("decode bs=1");
    assertThat(p.first("decode bs=1")).as("after the take").isTrue();
    p.put("decode bs=1", Map.of("timed", 2.0));
    assertThat(p.take().get("decode bs=1")).containsOnlyKeys("timed");
    assertThat(p.take()).isEmpty();
  }
}
