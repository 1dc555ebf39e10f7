package dev.ringmaster.sim.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.calibrate.BenchCalibration;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.WeightInventory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The serving model: KV capacity to admitted concurrency, queueing, preemption, prefix reuse. */
class ServingSimulatorTest {
  private static final long BIG_POOL = 1_000_000;

  /**
   * bench serve on one H200 (docs/cuda-performance.md, "Serving"): 8 prompts or 2 x concurrency.
   */
  @Test
  void servedThroughputOnTheH200WithinFifteenPercentFromMeasuredSteps() {
    int[] concurrency = {1, 16, 64, 128};
    double[] measured = {354, 1243, 2469, 3139};
    double[] medianItl = {2.58, 9.69, 13.18, 15.37};
    for (int i = 0; i < concurrency.length; i++) {
      int c = concurrency[i];
      ServeReport r =
          new ServeScheduler(
                  ServeWorkload.random(Math.max(8, 2 * c), 512, 128, c),
                  ServeOptions.defaults(),
                  BIG_POOL,
                  256,
                  256,
                  8192)
              .run(new MeasuredH200Steps());
      assertThat(r.completed()).isEqualTo(Math.max(8, 2 * c));
      assertThat(r.outputThroughput() / measured[i] - 1).as("c=%d", c).isBetween(-0.15, 0.15);
      assertThat(r.medianItlMs() / medianItl[i] - 1).as("c=%d ITL", c).isBetween(-0.05, 0.05);
      assertThat(r.peakRunning()).isEqualTo(c);
      assertThat(r.preemptions()).isZero();
    }
  }

  /**
   * The prefix-cache table: 32 groups of 8 requests, 2,048 of 2,176 prompt tokens shared, 32 in
   * flight. Measured 745 and 1,573 tok/s (2.11x), 77% of prompt tokens cached; the model is 26-28%
   * fast on both (its steps are measured at 512 tokens of context, these decode at ~2,200) but gets
   * the radix cache's gain and hit rate.
   */
  @Test
  void prefixCacheGainOnTheH200() {
    ServeWorkload gsp = new ServeWorkload(256, 2176, 128, 32, Double.POSITIVE_INFINITY, 2048, 8, 1);
    ServeReport off =
        new ServeScheduler(
                gsp, new ServeOptions(null, null, false, 64, true), BIG_POOL, 256, 256, 8192)
            .run(new MeasuredH200Steps());
    ServeReport on =
        new ServeScheduler(gsp, ServeOptions.defaults(), BIG_POOL, 256, 256, 8192)
            .run(new MeasuredH200Steps());
    assertThat(off.cachedPromptFraction()).isZero();
    assertThat(on.cachedPromptFraction()).isCloseTo(432.0 / 559, within(0.02));
    double gain = on.outputThroughput() / off.outputThroughput();
    assertThat(gain / (1573.0 / 745) - 1).isBetween(-0.15, 0.15);
    assertThat(on.medianTtftMs()).isLessThan(off.medianTtftMs() / 4);
    assertThat(off.outputThroughput() / 745 - 1).isBetween(0.0, 0.35);
    assertThat(on.outputThroughput() / 1573 - 1).isBetween(0.0, 0.35);
  }

  @Test
  void aPoolThatHoldsFewRequestsQueuesTheRestAndPreemptsAsTheyGrow() {
    // room for 3 prompts of 512 at admission, not for 3 full requests of 640
    ServeReport r =
        new ServeScheduler(
                ServeWorkload.random(16, 512, 128, 16),
                ServeOptions.defaults(),
                1700,
                256,
                256,
                8192)
            .run(new MeasuredH200Steps());
    assertThat(r.completed()).isEqualTo(16);
    assertThat(r.peakRunning()).isEqualTo(3);
    assertThat(r.peakWaiting()).isGreaterThanOrEqualTo(13);
    assertThat(r.preemptions()).isPositive();
    assertThat(r.meanQueueMs()).isPositive();
    assertThat(r.notes()).anyMatch(n -> n.contains("queued"));
    ServeReport roomy =
        new ServeScheduler(
                ServeWorkload.random(16, 512, 128, 16),
                ServeOptions.defaults(),
                BIG_POOL,
                256,
                256,
                8192)
            .run(new MeasuredH200Steps());
    assertThat(r.outputThroughput()).isLessThan(roomy.outputThroughput() / 2);
  }

  @Test
  void requestRateSpreadsArrivals() {
    ServeReport r =
        new ServeScheduler(
                new ServeWorkload(64, 512, 128, 0, 2.0, 0, 1, 7),
                ServeOptions.defaults(),
                BIG_POOL,
                256,
                256,
                8192)
            .run(new MeasuredH200Steps());
    // 64 requests at 2 per second take about 32 s, far longer than their work
    assertThat(r.durationS()).isBetween(20.0, 45.0);
    assertThat(r.requestThroughput()).isCloseTo(2.0, within(0.7));
    assertThat(r.peakRunning()).isLessThan(16);
  }

  /** The served model of docs/cuda-performance.md: V2-Lite's shape, DeepSeek-V3's vocabulary. */
  static ModelShape v2LiteV3Vocab(Path dir) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode cfg = (ObjectNode) json.readTree(Configs.path("deepseek-v2-lite").toFile());
    cfg.put("vocab_size", 129280);
    Path p = dir.resolve("config.json");
    Files.writeString(p, cfg.toString());
    return ModelShapes.load(p);
  }

  /**
   * End to end against {@code bench serve} on one H200 (docs/simulate.md, "Check against the H200":
   * V2-Lite shape, vocabulary 129,280, input 512, output 128, 2 x concurrency prompts, serve's
   * default flags), the engine whose mixed steps project only their decode rows: the h200 profile
   * calibrated on the one-batch run of the same call (decode 2.46 / 7.36 / 9.49 / 11.25 / 12.95 /
   * 14.79 ms at batch 1 / 8 / 16 / 32 / 64 / 128), nothing fitted to the served figures. Predicted
   * +2.9% / +6.5% / +0.4% / +1.2% at concurrency 1 / 16 / 64 / 128. The client's TTFT holds about 4
   * ms of HTTP and client that the model leaves out (visible at concurrency 1); at 128 the model's
   * median TTFT is 21% short (see {@link #medianTtftAtConcurrency128IsAWholeNumberOfSteps}).
   */
  @Test
  void servedRunOnTheH200FromTheForwardModelWithinFifteenPercent(@TempDir Path tmp)
      throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    ServingSimulator sim = new ServingSimulator(sameSessionH200(m));
    int[] concurrency = {1, 16, 64, 128};
    double[] measured = {360, 1329, 2944, 3801};
    double[] medianTtft = {26.6, 288, 618, 1132};
    double[] medianTpot = {2.54, 9.81, 16.99, 24.92};
    double[] throughputBound = {0.05, 0.10, 0.05, 0.05};
    for (int i = 0; i < concurrency.length; i++) {
      int c = concurrency[i];
      ServeReport r =
          sim.predict(
              m, servedConfig(), ServeOptions.defaults(), ServeWorkload.random(2 * c, 512, 128, c));
      assertThat(r.completed()).isEqualTo(2 * c);
      assertThat(r.outputThroughput() / measured[i] - 1)
          .as("c=%d tok/s", c)
          .isBetween(-throughputBound[i], throughputBound[i]);
      assertThat(r.medianTpotMs() / medianTpot[i] - 1)
          .as("c=%d median TPOT", c)
          .isBetween(-0.10, 0.10);
      if (c == 1) {
        assertThat(medianTtft[i] - r.medianTtftMs()).as("c=1 client overhead").isBetween(2.0, 8.0);
      } else if (c < 128) {
        assertThat(r.medianTtftMs() / medianTtft[i] - 1)
            .as("c=%d median TTFT", c)
            .isBetween(-0.05, 0.05);
      } else {
        assertThat(r.medianTtftMs() / medianTtft[i] - 1)
            .as("c=128 median TTFT")
            .isBetween(-0.25, -0.15);
      }
    }
    // The sampled runs (temperature 0.8, top-p 0.95) served as fast as greedy ones.
    double[] sampled = {2933, 3883};
    for (int i = 0; i < 2; i++) {
      int c = i == 0 ? 64 : 128;
      ServeReport r =
          sim.predict(
              m, servedConfig(), ServeOptions.defaults(), ServeWorkload.random(2 * c, 512, 128, c));
      assertThat(r.outputThroughput() / sampled[i] - 1)
          .as("c=%d sampled", c)
          .isBetween(-0.05, 0.05);
    }
  }

  /**
   * At concurrency 128 the second wave is a queue at its limit: each mixed step ends one group of
   * 16 first-wave requests, and the 16 sent in their place are prefilled three steps later (the
   * overlap schedule's step of delay, then the step that prefills them), so the model's median TTFT
   * is three mixed steps. The measured median, 1,132 ms, is 3.8 of the model's steps: one that the
   * model does not reproduce.
   */
  @Test
  void medianTtftAtConcurrency128IsAWholeNumberOfSteps(@TempDir Path tmp) throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    HardwareProfile hw = sameSessionH200(m);
    SimulatedStepCosts costs = new SimulatedStepCosts(hw, new WeightInventory(m), servedConfig());
    double mixedStepMs = costs.stepUs(80, 576, 8192, 16, 0, false) / 1000;
    ServeReport r =
        new ServingSimulator(hw)
            .predict(
                m,
                servedConfig(),
                ServeOptions.defaults(),
                ServeWorkload.random(256, 512, 128, 128));
    assertThat(r.medianTtftMs() / (3 * mixedStepMs)).isCloseTo(1.0, within(0.02));
    assertThat(1132 / mixedStepMs).isBetween(3.5, 4.0);
  }

  /**
   * The mechanism the engine change removed: charged over every token of a mixed chunk, as the
   * older engine ran them, the absorbed projections make the present engine's run 15-18% slow from
   * concurrency 64 on; over the decode rows only (the present engine) the model is within 5%. The
   * same whole-chunk charge on the older session's profile predicted that session's served run
   * (history records of a751fae, 3,127 tok/s at concurrency 128) within 1%. A profile calibrated on
   * an older engine's one-batch run (batch-1 step 2.97 ms against 2.46) is 20% slow at concurrency
   * 1.
   */
  @Test
  void eachMechanismCarriesItsShareOfTheServedError(@TempDir Path tmp) throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    ServeWorkload c128 = ServeWorkload.random(256, 512, 128, 128);
    HardwareProfile present = sameSessionH200(m);
    assertThat(served(present, m, c128, false) / 3801 - 1).isBetween(-0.05, 0.05);
    assertThat(served(present, m, c128, true) / 3801 - 1).isLessThan(-0.15);
    ServeWorkload c64 = ServeWorkload.random(128, 512, 128, 64);
    assertThat(served(present, m, c64, true) / 2944 - 1).isLessThan(-0.12);
    HardwareProfile olderSession =
        calibrated(oneBatch("h200-v2lite-v3vocab-onebatch-a751fae.json"), m);
    assertThat(served(olderSession, m, c128, true) / 3127.4 - 1).isBetween(-0.01, 0.01);
    HardwareProfile olderEngine =
        calibrated(oneBatch("h200-v2lite-onebatch-9b7a8af.json"), Configs.load("deepseek-v2-lite"));
    double c1 =
        new ServingSimulator(olderEngine)
            .predict(
                m, servedConfig(), ServeOptions.defaults(), ServeWorkload.random(2, 512, 128, 1))
            .outputThroughput();
    assertThat(c1 / 360 - 1).isLessThan(-0.15);
  }

  /**
   * Output throughput of {@code w} on {@code hw}, the absorbed projections charged over the decode
   * rows (the present engine) or, with {@code wholeChunk}, over every prompt token of a mixed step
   * too (the older engine).
   */
  private static double served(
      HardwareProfile hw, ModelShape m, ServeWorkload w, boolean wholeChunk) {
    SimulatedStepCosts costs = new SimulatedStepCosts(hw, new WeightInventory(m), servedConfig());
    StepCosts charged =
        (rows, ctx, prompt, seqs, start, graphed) ->
            costs.stepUs(rows, ctx, prompt, seqs, start, graphed)
                + (wholeChunk && rows > 0 && prompt > 0 ? costs.absorbedProjectionsUs(prompt) : 0);
    ServeReport r =
        new ServeScheduler(w, ServeOptions.defaults(), BIG_POOL, 256, 256, 8192).run(charged);
    assertThat(r.completed()).isEqualTo(w.numPrompts());
    return r.outputThroughput();
  }

  /**
   * A mixed step of 64 decode rows and 8,128 prompt tokens pays the absorbed projections of its 64
   * decode rows only (about 1 ms at V2-Lite's shape), not of its 8,192 tokens (124 ms); a prompt
   * step without decode rows pays none.
   */
  @Test
  void aMixedStepProjectsOnlyItsDecodeRows(@TempDir Path tmp) throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    HardwareProfile hw = sameSessionH200(m);
    WeightInventory inv = new WeightInventory(m);
    SimulatedStepCosts with = new SimulatedStepCosts(hw, inv, servedConfig());
    SimulatedStepCosts without =
        new SimulatedStepCosts(withoutAbsorbRate(hw, tmp), inv, servedConfig());
    double rowsOnly = with.absorbedProjectionsUs(64);
    assertThat(rowsOnly).isBetween(900.0, 1050.0);
    assertThat(with.absorbedProjectionsUs(8192)).isBetween(120_000.0, 130_000.0);
    double mixed = with.stepUs(64, 576, 8128, 16, 0, false);
    assertThat(mixed - without.stepUs(64, 576, 8128, 16, 0, false))
        .isCloseTo(rowsOnly, within(1e-6 * mixed));
    assertThat(with.stepUs(0, 0, 8192, 16, 0, false))
        .isEqualTo(without.stepUs(0, 0, 8192, 16, 0, false));
  }

  /**
   * The overlap schedule: a request that reaches the engine while a step runs joins the step after
   * next, so refilled slots wait a step longer and the TTFT of queued requests grows (c=128: median
   * 894 ms with it, 598 without, 1,132 measured with it on).
   */
  @Test
  void overlapScheduleDelaysAdmissionByAStep(@TempDir Path tmp) throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    ServingSimulator sim = new ServingSimulator(sameSessionH200(m));
    ServeWorkload w = ServeWorkload.random(256, 512, 128, 128);
    ServeReport on = sim.predict(m, servedConfig(), ServeOptions.defaults(), w);
    ServeReport off =
        sim.predict(m, servedConfig(), new ServeOptions(null, null, true, 64, false), w);
    assertThat(on.medianTtftMs()).isGreaterThan(off.medianTtftMs() * 1.2);
    assertThat(on.durationS()).isGreaterThanOrEqualTo(off.durationS());
  }

  /** A burst to an idle engine: the first request prefills alone, the rest in the next chunk. */
  @Test
  void aBurstToAnIdleEngineStartsWithItsFirstRequestAlone() {
    List<int[]> steps = new java.util.ArrayList<>();
    StepCosts recording =
        (rows, ctx, prompt, seqs, start, graphed) -> {
          steps.add(new int[] {rows, prompt, seqs});
          return new MeasuredH200Steps().stepUs(rows, ctx, prompt, seqs, start, graphed);
        };
    new ServeScheduler(
            ServeWorkload.random(16, 512, 128, 16),
            ServeOptions.defaults(),
            BIG_POOL,
            256,
            256,
            8192)
        .run(recording);
    assertThat(steps.get(0)).containsExactly(0, 512, 1);
    // the second step was planned while the first ran, before the burst had reached the engine
    assertThat(steps.get(1)).containsExactly(1, 0, 0);
    assertThat(steps.get(2)).containsExactly(1, 15 * 512, 15);
  }

  /** The served configuration: TP 1, bf16, graphs up to 256, chunk 8192 (serve's defaults). */
  private static ServingConfig servedConfig() {
    ServingConfig d = ServingConfig.defaults(1);
    return new ServingConfig(
        1, 1, d.a2a(), d.allreduce(), d.quant(), "bf16", 1, 640, true, 256, 8192, null);
  }

  private static MeasurementFile.OneBatch oneBatch(String name) throws Exception {
    try (var in = ServingSimulatorTest.class.getResourceAsStream("/calibrate/" + name)) {
      return (MeasurementFile.OneBatch)
          MeasurementsIo.parseAny(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  /** The h200 profile calibrated on the served run's own one-batch run. */
  static HardwareProfile sameSessionH200(ModelShape served) throws Exception {
    return calibrated(oneBatch("h200-v2lite-v3vocab-onebatch-ranged-absorb.json"), served);
  }

  private static HardwareProfile calibrated(MeasurementFile.OneBatch run, ModelShape shape) {
    return BenchCalibration.calibrate(Profiles.load("h200"), List.of(run), r -> shape, "h200-c")
        .profile();
  }

  private static HardwareProfile withoutAbsorbRate(HardwareProfile hw, Path dir) throws Exception {
    String json =
        Profiles.toJson(hw)
            .replaceAll("\"mla_absorb_flops\" : [0-9.E+]+", "\"mla_absorb_flops\" : 0.0");
    assertThat(json).contains("\"mla_absorb_flops\" : 0.0");
    Path f = dir.resolve("no-absorb.json");
    Files.writeString(f, json);
    return Profiles.load(f.toString());
  }

  private static ServingConfig glmTp8(int maxBs) {
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
        maxBs,
        8192,
        null);
  }

  @Test
  void cudaGraphMaxBsAndMemFractionActThroughTheRunningLimitAndTheKvPool() {
    ModelShape glm5 = Configs.load("glm5");
    ServingSimulator sim = new ServingSimulator(Profiles.load("rtx-pro-6000-x8"));
    ServeWorkload w = ServeWorkload.random(512, 1024, 256, 256);
    ServeReport wide = sim.predict(glm5, glmTp8(512), ServeOptions.defaults(), w);
    ServeReport narrow = sim.predict(glm5, glmTp8(128), ServeOptions.defaults(), w);
    assertThat(wide.runs()).isTrue();
    assertThat(narrow.maxRunningRequests()).isEqualTo(128);
    assertThat(wide.maxRunningRequests()).isGreaterThan(128);
    assertThat(narrow.peakRunning()).isEqualTo(128);
    assertThat(narrow.notes()).anyMatch(n -> n.contains("queued"));
    assertThat(narrow.kvCapacityTokens()).isGreaterThan(wide.kvCapacityTokens());
    assertThat(narrow.meanQueueMs()).isGreaterThan(wide.meanQueueMs());
    // a static share that leaves little KV cache admits fewer requests and queues the rest
    double weightsShare =
        MemoryPlanner.plan(
                    new dev.ringmaster.sim.model.WeightInventory(glm5),
                    glmTp8(512),
                    Profiles.load("rtx-pro-6000-x8"))
                .weightsBytes()
            / Profiles.load("rtx-pro-6000-x8").gpu().memoryBytes();
    ServeReport tight =
        sim.predict(
            glm5, glmTp8(512), new ServeOptions(null, weightsShare + 0.02, true, 64, true), w);
    assertThat(tight.kvCapacityTokens()).isLessThan(wide.kvCapacityTokens() / 4);
    assertThat(tight.peakRunning()).isLessThan(wide.peakRunning());
    assertThat(tight.outputThroughput()).isLessThan(wide.outputThroughput());
    ServeReport none =
        sim.predict(
            glm5, glmTp8(512), new ServeOptions(null, weightsShare - 0.01, true, 64, true), w);
    assertThat(none.runs()).isFalse();
    assertThat(none.doesNotRun().getFirst()).contains("--mem-fraction-static");
  }
}
