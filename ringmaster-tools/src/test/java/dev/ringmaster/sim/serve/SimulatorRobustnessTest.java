package dev.ringmaster.sim.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.hw.Profiles;
import org.junit.jupiter.api.Test;

class SimulatorRobustnessTest {
  @Test
  void mtpOnAModelWithoutAnMtpLayerWarns() {
    Simulator sim = new Simulator(Profiles.load("h200"));
    var noMtp = Configs.load("deepseek-v2-lite");
    assertThat(noMtp.numMtpLayers()).isZero();
    Prediction p =
        sim.predict(
            noMtp, ServingConfig.defaults(1).withSpec(new SpecDecoding("MTP", 3, 4, 1, 2.5)));
    assertThat(p.warnings()).anyMatch(w -> w.contains("no MTP layer"));
  }
}
