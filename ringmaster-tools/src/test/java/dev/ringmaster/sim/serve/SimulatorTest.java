package dev.ringmaster.sim.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.QuantScheme;
import org.junit.jupiter.api.Test;

class SimulatorTest {
  private final ModelShape glm5 = Configs.load("glm5");
  private final Simulator rtx = new Simulator(Profiles.load("rtx-pro-6000-x8"));

  private static ServingConfig glmTp8(AllreduceAlgorithm ar, int maxBs, SpecDecoding spec) {
    return new ServingConfig(
        8,
        1,
        A2aBackend.NONE,
        ar,
        QuantScheme.preset("nvfp4"),
        "bf16",
        1,
        4096,
        true,
        maxBs,
        8192,
        spec);
  }

  @Test
  void v2LiteOnOneH200ScalesWithBatch() {
    Simulator h200 = new Simulator(Profiles.load("h200"));
    ModelShape v2 = Configs.load("deepseek-v2-lite");
    Prediction b1 = h200.predict(v2, ServingConfig.defaults(1));
    Prediction b32 = h200.predict(v2, ServingConfig.defaults(1).withBatch(32));
    assertThat(b1.collectivesPerStep()).isEmpty();
    assertThat(b32.decodeTokensPerS()).isGreaterThan(b1.decodeTokensPerS());
    assertThat(b32.stepTimeMs()).isGreaterThan(b1.stepTimeMs());
    assertThat(b32.dominant()).isEqualTo("moe");
    assertThat(b1.kvCapacityTokens()).isPositive();
  }

  @Test
  void glm5OnPcieHasTwoAllreducesPerLayer() {
    Prediction p = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 512, null));
    int allreduces =
        p.collectivesPerStep().stream()
            .filter(c -> c.op().equals("allreduce"))
            .mapToInt(CollectiveCall::count)
            .sum();
    assertThat(allreduces).isEqualTo(2 * 78 + 1);
    assertThat(p.collectivesPerStep().get(1).bytes()).isEqualTo(6144 * 2.0);
    assertThat(p.breakdownMs().get("collectives")).isGreaterThan(p.breakdownMs().get("moe"));
  }

  @Test
  void fewerCapturedGraphsLeaveMoreKvCache() {
    Prediction big = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 512, null));
    Prediction small = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 128, null));
    assertThat(small.memory().cudaGraphBytes()).isLessThan(big.memory().cudaGraphBytes());
    assertThat(small.kvCapacityTokens()).isGreaterThan(big.kvCapacityTokens());
  }

  @Test
  void largeDraftTreesCostMoreOnACommunicationBoundBox() {
    SpecDecoding small = new SpecDecoding("EAGLE3", 3, 4, 1, 2.5);
    SpecDecoding large = new SpecDecoding("EAGLE3", 5, 64, 8, 3.5);
    Prediction s = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 128, small));
    Prediction l = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 128, large));
    assertThat(l.speculative().verifyMs()).isGreaterThan(s.speculative().verifyMs());
    assertThat(l.perStreamTokensPerS()).isLessThan(s.perStreamTokensPerS());
  }

  @Test
  void unsupportedAllreduceDoesNotRun() {
    Prediction fused = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.FUSED, 512, null));
    Prediction nccl = rtx.predict(glm5, glmTp8(AllreduceAlgorithm.NCCL, 512, null));
    assertThat(fused.runs()).isFalse();
    assertThat(fused.doesNotRun())
        .anyMatch(w -> w.contains("fused allreduce not supported on sm_120"));
    assertThat(nccl.runs()).isTrue();
  }

  @Test
  void aBatchLargerThanTheKvCacheDoesNotRun() {
    ServingConfig cfg = glmTp8(AllreduceAlgorithm.NCCL, 512, null);
    Prediction fits = rtx.predict(glm5, cfg);
    long max = fits.maxBatchAtContext();
    assertThat(max).isPositive();
    Prediction over = rtx.predict(glm5, cfg.withBatch((int) max + 1));
    assertThat(over.runs()).isFalse();
    assertThat(over.doesNotRun()).anyMatch(w -> w.startsWith("KV cache holds"));
    assertThat(rtx.predict(glm5, cfg.withBatch((int) max)).runs()).isTrue();
  }

  /** GLM-5 with NVFP4 experts at TP 8 / EP 8 over {@code a2a}, batch 1 at 4,096 tokens. */
  private static ServingConfig glm5AtEp8(A2aBackend a2a) {
    return new ServingConfig(
        8,
        8,
        a2a,
        AllreduceAlgorithm.NCCL,
        QuantScheme.preset("nvfp4"),
        "bf16",
        1,
        4096,
        true,
        128,
        8192,
        null);
  }

  @Test
  void allToAllExpertParallelAddsDispatchAndCombine() {
    ServingConfig cfg = glm5AtEp8(A2aBackend.ALL_TO_ALL);
    Prediction p = rtx.predict(glm5, cfg);
    // the engine's blocks at batch 1, EP 8: one f32 row of hidden + 2 topK to each of 8 ranks
    assertThat(p.collectivesPerStep())
        .anyMatch(c -> c.op().equals("all-to-all") && c.bytes() == 4.0 * 8 * (6144 + 2 * 8));
    assertThat(p.collectivesPerStep())
        .anyMatch(c -> c.op().equals("all-to-all") && c.bytes() == 4.0 * 8 * 8 * 6144);
    // f32 blocks for an 8,192-token chunk (~2.5 GB for GLM-5's widths) and NCCL's channels
    assertThat(p.memory().a2aBufferBytes())
        .isEqualTo(MemoryPlanner.engineAllToAllBytes(glm5, 8, 8192) + (1L << 30));
    assertThat(MemoryPlanner.engineAllToAllBytes(glm5, 8, 8192) / 1e9).isBetween(2.4, 2.6);
    // NCCL's all-to-all runs over PCIe; the DeepEP what-if is the one built for NVLink/RDMA
    assertThat(p.warnings()).noneMatch(w -> w.contains("PCIe-only"));
    ServingConfig deepep = glm5AtEp8(A2aBackend.DEEPEP);
    Prediction d = rtx.predict(glm5, deepep);
    assertThat(d.warnings()).anyMatch(w -> w.contains("PCIe-only"));
    assertThat(d.warnings()).anyMatch(w -> w.contains("what-if"));
    // the lean all-to-all moves far fewer bytes: fp8 rows to the experts' ranks only
    assertThat(d.stepTimeMs()).isLessThan(p.stepTimeMs());
  }

  @Test
  void bf16Glm5DoesNotFitOnOneH200() {
    Prediction p = new Simulator(Profiles.load("h200")).predict(glm5, ServingConfig.defaults(1));
    assertThat(p.memory().fits()).isFalse();
    assertThat(p.runs()).isFalse();
    assertThat(p.doesNotRun()).anyMatch(w -> w.startsWith("out of memory ("));
  }
}
