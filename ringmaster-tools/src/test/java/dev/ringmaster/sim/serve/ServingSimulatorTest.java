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
        new ServeScheduler(gsp, new ServeOptions(null, null, false, 64), BIG_POOL, 256, 256, 8192)
            .run(new MeasuredH200Steps());
    ServeReport on =
        new ServeScheduler(gsp, ServeOptions.defaults(), BIG_POOL, 256, 256, 8192)
            .run(new MeasuredH200Steps());
    assertThat(off.cachedPromptFraction()).isZero();
    assertThat(on.cachedPromptFraction()).isCloseTo(0.77, within(0.02));
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
   * End to end: the H200 profile calibrated on the fixture of the fused-launch engine (decode 2.97
   * / 7.40 / 11.07 / 15.25 ms at batch 1 / 8 / 32 / 128) and its measured prefill rate, against
   * bench serve of the later engine. Predicted -19.9%, +12.9%, +19.3%, +21.9% at concurrency 1 / 16
   * / 64 / 128: the 15% is missed at 1 (that fixture's batch-1 step is slower than today's)
   * and at 64 and 128 (the served run spends about 2 s more than its decode and prefill steps;
   * docs/simulate.md). The bound pins these figures.
   */
  @Test
  void servedThroughputOnTheH200FromTheForwardModel(@TempDir Path tmp) throws Exception {
    ModelShape m = v2LiteV3Vocab(tmp);
    MeasurementFile.OneBatch run;
    try (var in = getClass().getResourceAsStream("/calibrate/h200-v2lite-onebatch-9b7a8af.json")) {
      run =
          (MeasurementFile.OneBatch)
              MeasurementsIo.parseAny(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    HardwareProfile calibrated =
        BenchCalibration.calibrate(
                Profiles.load("h200"),
                List.of(run),
                r -> Configs.load("deepseek-v2-lite"),
                "h200-c")
            .profile();
    ServingSimulator sim = new ServingSimulator(calibrated);
    ServingConfig d = ServingConfig.defaults(1);
    ServingConfig cfg =
        new ServingConfig(
            1, 1, d.a2a(), d.allreduce(), d.quant(), "bf16", 1, 640, true, 256, 8192, null);
    int[] concurrency = {1, 16, 64, 128};
    double[] measured = {354, 1243, 2469, 3139};
    double[] medianItl = {2.58, 9.69, 13.18, 15.37};
    double[] oneBatch = {387, 1643, 5028, 8263};
    for (int i = 0; i < concurrency.length; i++) {
      int c = concurrency[i];
      ServeReport r =
          sim.predict(
              m,
              cfg,
              ServeOptions.defaults(),
              ServeWorkload.random(Math.max(8, 2 * c), 512, 128, c));
      // the decode steps of the calibrated profile; batch 1 is the older engine's (2.97 ms)
      if (c > 1) {
        assertThat(r.medianItlMs() / medianItl[i] - 1).as("c=%d ITL", c).isBetween(-0.10, 0.10);
      }
      assertThat(r.outputThroughput() / measured[i] - 1).as("c=%d", c).isBetween(-0.25, 0.25);
      assertThat(r.outputThroughput()).isLessThan(oneBatch[i]);
    }
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
        sim.predict(glm5, glmTp8(512), new ServeOptions(null, weightsShare + 0.02, true, 64), w);
    assertThat(tight.kvCapacityTokens()).isLessThan(wide.kvCapacityTokens() / 4);
    assertThat(tight.peakRunning()).isLessThan(wide.peakRunning());
    assertThat(tight.outputThroughput()).isLessThan(wide.outputThroughput());
    ServeReport none =
        sim.predict(glm5, glmTp8(512), new ServeOptions(null, weightsShare - 0.01, true, 64), w);
    assertThat(none.runs()).isFalse();
    assertThat(none.doesNotRun().getFirst()).contains("--mem-fraction-static");
  }
}
