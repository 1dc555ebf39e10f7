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

  @Test
  void deepEpLowLatencySizedForThePrefillChunkDoesNotRunOutOfMemory() {
    Simulator sim = new Simulator(Profiles.load("rtx-pro-6000-x8"));
    var glm5 = Configs.load("glm5");
    ServingConfig base =
        new ServingConfig(
            8,
            8,
            A2aBackend.DEEPEP_LOW_LATENCY,
            dev.ringmaster.sim.hw.AllreduceAlgorithm.NCCL,
            dev.ringmaster.sim.model.QuantScheme.preset("nvfp4"),
            "bf16",
            1,
            4096,
            true,
            512,
            8192,
            null);
    Prediction full = sim.predict(glm5, base);
    assertThat(full.runs()).isFalse();
    assertThat(full.doesNotRun())
        .anyMatch(r -> r.startsWith("out of memory (") && r.contains("all-to-all buffers"));
    // 256 experts x 8192 tokens x (two 12 KiB rows), odd and even: about 103 GB
    assertThat(full.memory().a2aBufferBytes()).isBetween(100e9, 106e9);
    // the decode-sized buffers (128 tokens per rank) fit
    Prediction decodeSized = sim.predict(glm5, withA2a(base, A2aBackend.DEEPEP));
    assertThat(decodeSized.runs()).isTrue();
  }

  private static ServingConfig withA2a(ServingConfig c, A2aBackend a) {
    return new ServingConfig(
        c.tp(),
        c.ep(),
        a,
        c.allreduce(),
        c.quant(),
        c.kvDtype(),
        c.batch(),
        c.contextLen(),
        c.cudaGraph(),
        c.cudaGraphMaxBs(),
        c.chunkedPrefill(),
        c.spec());
  }
}
