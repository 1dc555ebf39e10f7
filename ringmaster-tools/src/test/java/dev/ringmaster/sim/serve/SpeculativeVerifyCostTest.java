package dev.ringmaster.sim.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.StepShape;
import dev.ringmaster.sim.model.WeightInventory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The verify pass at its cost: eager collectives, message sizes, draft memory, acceptance. */
class SpeculativeVerifyCostTest {
  private final ModelShape glm5 = Configs.load("glm5");
  private final Simulator rtx = new Simulator(Profiles.load("rtx-pro-6000-x8"));

  private static ServingConfig glmTp8(SpecDecoding spec) {
    return new ServingConfig(
        8,
        1,
        A2aBackend.NONE,
        AllreduceAlgorithm.NCCL,
        QuantScheme.preset("nvfp4"),
        "bf16",
        1,
        4096,
        true,
        512,
        8192,
        spec);
  }

  @Test
  void eagerVerifyCollectivesMakeSpeculationLoseOnThePcieBox() {
    Prediction p = rtx.predict(glm5, glmTp8(new SpecDecoding("EAGLE3", 3, 4, 1, 2.5)));
    assertThat(p.speculative().speedup()).isLessThan(1.0);
    assertThat(p.warnings()).anyMatch(w -> w.contains("speculative decoding is slower"));
  }

  @Test
  void graphCapturedMtpWithAcceptanceTwoWinsOnThePcieBox() {
    SpecDecoding mtp = new SpecDecoding("MTP", 3, 4, 1, 2.0).withVerifyGraphed(true);
    Prediction p = rtx.predict(glm5, glmTp8(mtp));
    assertThat(p.speculative().speedup()).isGreaterThan(1.0);
    // the same cycle run eagerly loses: the difference is the verify path, not the acceptance
    Prediction eager = rtx.predict(glm5, glmTp8(mtp.withVerifyGraphed(false)));
    assertThat(eager.speculative().speedup()).isLessThan(1.0);
  }

  @Test
  void verifyCollectivesCarryAllDraftTokensAndWaitForTheLastRankWhenEager() {
    ServingConfig cfg = glmTp8(null);
    ForwardTimer timer = rtx.timer();
    WeightInventory inv = new WeightInventory(glm5);
    StepShape verify = StepShape.decode(1, 4, 4096, "bf16");
    CollectiveCall graphed = timer.time(inv, cfg, verify, true).collectives().get(1);
    CollectiveCall eager = timer.time(inv, cfg, verify, false).collectives().get(1);
    assertThat(graphed.bytes()).isEqualTo(2.0 * 4 * 6144);
    double skew = Profiles.load("rtx-pro-6000-x8").collectives().eagerSkewUs(8);
    // 30 us at two ranks, H(8) - 1 = 1.72 mean delays at eight
    assertThat(skew).isCloseTo(30 * 2 * (761.0 / 280 - 1), within(1e-9));
    assertThat(eager.timeUsEach()).isCloseTo(graphed.timeUsEach() + skew, within(1e-9));
    assertThat(eager.algorithm()).contains("eager launch skew");
  }

  @Test
  void draftWeightsAndDraftKvComeOutOfTheKvPool() {
    Prediction none = rtx.predict(glm5, glmTp8(null));
    Prediction mtp = rtx.predict(glm5, glmTp8(new SpecDecoding("MTP", 1, 2, 1, 1.8)));
    assertThat(mtp.memory().weightsBytes()).isGreaterThan(none.memory().weightsBytes());
    assertThat(mtp.memory().kvBytesPerToken()).isGreaterThan(none.memory().kvBytesPerToken());
    assertThat(mtp.kvCapacityTokens()).isLessThan(none.kvCapacityTokens());
    double mtpLayerBytes =
        MemoryPlanner.weightsOnRank(new WeightInventory(glm5).mtp(), glmTp8(null));
    assertThat(mtp.memory().weightsBytes() - none.memory().weightsBytes())
        .isCloseTo(mtpLayerBytes, within(1.0));
  }

  @Test
  void perPositionAcceptanceGivesTheAcceptLength() {
    SpecDecoding s = new SpecDecoding("EAGLE3", 3, 4, 1, 1, false, List.of(0.8, 0.5, 0.25));
    assertThat(s.acceptLength()).isCloseTo(2.55, within(1e-12));
    assertThatThrownBy(() -> new SpecDecoding("EAGLE3", 3, 4, 1, 1, false, List.of(0.5, 0.8)))
        .hasMessageContaining("exceeds the rate before it");
    assertThatThrownBy(
            () -> new SpecDecoding("EAGLE3", 3, 4, 1, 1, false, List.of(0.9, 0.8, 0.7, 0.6)))
        .hasMessageContaining("at most 3 draft positions");
    assertThatThrownBy(() -> new SpecDecoding("EAGLE3", 3, 4, 1, 1, false, List.of(1.5)))
        .hasMessageContaining("not between 0 and 1");
  }

  /**
   * The engine's own figure: on the 2-core CPU a verify of the last token and 4 drafts (5 tokens)
   * of the embedded model costs about 2.9 decode steps (docs/speculative.md). The CPU profile's
   * roofline gives 1.76: more than one step (more experts read, five tokens of compute) but 39%
   * under, since that profile's compute rate is nominal (2 cores x 2 FMA x 8 lanes x 3 GHz at 0.5),
   * not measured. The bound pins that gap: a model that made the verify as cheap as a decode step,
   * or one that moved further from the measurement, fails.
   */
  @Test
  void fiveTokenVerifyOnTheCpuAgainstWhatTheEngineMeasured() throws Exception {
    Path dir = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(dir.resolve("models/sotu-moe"))) {
      dir = dir.getParent();
    }
    ModelShape sotu = ModelShapes.load(dir.resolve("models/sotu-moe/config.json"));
    Simulator cpu = new Simulator(Profiles.load("cpu-host"));
    ServingConfig cfg = ServingConfig.defaults(1);
    WeightInventory inv = new WeightInventory(sotu);
    double decode =
        cpu.timer().time(inv, cfg, StepShape.decode(1, 1, 512, "bf16"), false).totalUs();
    double verify =
        cpu.timer().time(inv, cfg, StepShape.decode(1, 5, 512, "bf16"), false).totalUs();
    double measured = 2.9;
    assertThat(verify / decode).isGreaterThan(1.5).isBetween(measured * 0.6, measured);
  }
}
