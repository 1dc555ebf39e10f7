package dev.ringmaster.tools.tune;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.tools.benchserve.BenchServeConfig;
import dev.ringmaster.tools.doctor.FakeFacts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pruning before running, with a fake executor (no processes): each cause recorded with its reason,
 * checks applied in order, the simulate-first order from a deterministic predictor with only the
 * best K run, the predictions beside the measurements and the rank correlation; the doctor check on
 * made-up hosts and the simulator check on the embedded model's shape.
 */
class TunePruningTest {

  private static TuneConfig config(Path out, List<String> fixed, String... space) {
    return new TuneConfig(
        List.of("java"),
        Path.of("model"),
        fixed,
        TuneSpace.parse(List.of(space)),
        new TuneConfig.Workload(
            new BenchServeConfig.Dataset(
                "random",
                null,
                8,
                null,
                null,
                16,
                8,
                1.0,
                new BenchServeConfig.SharedPrefix(64, 16, 2048, 128, 256, 0.0)),
            new BenchServeConfig.Load(
                Double.POSITIVE_INFINITY, null, 1, 1, false, false, null, true, false),
            0),
        Duration.ofSeconds(5),
        Duration.ofSeconds(5),
        out,
        Objective.throughput(),
        1,
        null);
  }

  /** Measures each point as its {@code --x} value times 10 and remembers the order it ran in. */
  private static final class FakeExecutor implements TrialExecutor {
    final List<String> ran = new ArrayList<>();

    @Override
    public TrialResult run(Trial t) {
      ran.add(t.id());
      double v = 10 * Double.parseDouble(t.settings().get("--x"));
      return new TrialResult(
          t.id(),
          t.settings(),
          "ok",
          "done",
          "",
          null,
          "",
          v,
          Map.of("output_throughput", v),
          0.1,
          List.of("java"),
          "l.log",
          List.of(v),
          0.0);
    }
  }

  private static PointCheck rejecting(String cause, String value, String reason) {
    return new PointCheck() {
      @Override
      public String cause() {
        return cause;
      }

      @Override
      public Optional<String> reject(TuneConfig config, Trial trial) {
        return value.equals(trial.settings().get("--x")) ? Optional.of(reason) : Optional.empty();
      }
    };
  }

  /** Predicts 5 for x=1, 4 for x=2, ..., so the predicted order is the grid reversed. */
  private static final TrialPredictor DESCENDING =
      new TrialPredictor() {
        @Override
        public OptionalDouble predict(TuneConfig config, Trial trial) {
          return OptionalDouble.of(6 - Double.parseDouble(trial.settings().get("--x")));
        }

        @Override
        public String describe() {
          return "a fake ranking";
        }
      };

  private static String quiet(ByteArrayOutputStream b) {
    return b.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aReportLinksItsChartOnlyWhereTheRuntimeDrawsIt(@TempDir Path out) throws Exception {
    TuneConfig cfg = config(out, List.of(), "--x=1,2");
    TuneReport drawn =
        Tuner.run(
            cfg, Pruning.none(), new FakeExecutor(), new PrintStream(new ByteArrayOutputStream()));
    assertThat(drawn.chart()).isEqualTo(dev.ringmaster.util.PngSupport.available());
    assertThat(drawn.markdown()).contains("![trials by objective](" + TuneReport.CHART + ")");
    assertThat(Files.exists(out.resolve(TuneReport.CHART))).isTrue();
    TuneReport without =
        new TuneReport(drawn.config(), drawn.trials(), drawn.results(), drawn.pruning(), false);
    assertThat(without.markdown()).doesNotContain(TuneReport.CHART).contains("2 measured");
  }

  @Test
  void eachCheckPrunesWithItsCauseAndTheFirstThatRejectsWins(@TempDir Path out) throws Exception {
    TuneConfig cfg = config(out, List.of(), "--x=1,2,3,4");
    Pruning pruning =
        new Pruning(
            List.of(
                rejecting("doctor", "2", "cuda-device unsupported (hardware): no GPU"),
                rejecting("does not run", "2", "never reached: doctor came first"),
                rejecting("does not run", "3", "simulator on h200: out of memory")),
            null,
            0,
            List.of("The simulator's feasibility check was not made: no profile."));
    FakeExecutor ex = new FakeExecutor();
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    TuneReport report = Tuner.run(cfg, pruning, ex, new PrintStream(log, true));

    assertThat(ex.ran).containsExactly("--x 1", "--x 4");
    List<TrialResult> ev = new EvidenceLog(cfg.evidence()).read();
    assertThat(ev).hasSize(4);
    TrialResult two = ev.stream().filter(r -> r.id().equals("--x 2")).findFirst().orElseThrow();
    assertThat(two.status()).isEqualTo("pruned");
    assertThat(two.cause()).isEqualTo("doctor");
    assertThat(two.lastError()).contains("cuda-device unsupported");
    TrialResult three = ev.stream().filter(r -> r.id().equals("--x 3")).findFirst().orElseThrow();
    assertThat(three.cause()).isEqualTo("does not run");
    assertThat(three.lastError()).contains("out of memory");
    assertThat(report.failures()).isEmpty();
    assertThat(report.pruned()).hasSize(2);
    assertThat(report.markdown())
        .contains("4 trials: 2 measured, 0 failed, 2 pruned")
        .contains("## Pruned before running")
        .contains("The simulator's feasibility check was not made: no profile.")
        .contains("| `--x 2` | doctor | cuda-device unsupported (hardware): no GPU |")
        .contains("| `--x 3` | does not run | simulator on h200: out of memory |")
        .doesNotContain("## Failures");
    assertThat(quiet(log)).contains("trial 2/4 --x 2 pruned (doctor)", "2 of 4 points to run");
    assertThat(quiet(log)).contains("run 2 of 2: trial 4/4 --x 4");

    // resumed: the pruned points are recorded, so nothing is judged or run again
    FakeExecutor again = new FakeExecutor();
    Tuner.run(cfg, pruning, again, new PrintStream(new ByteArrayOutputStream(), true));
    assertThat(again.ran).isEmpty();
    assertThat(new EvidenceLog(cfg.evidence()).read()).hasSize(4);
  }

  @Test
  void simulateFirstRunsTheBestPredictedInThatOrderAndPrunesTheRest(@TempDir Path out)
      throws Exception {
    TuneConfig cfg = config(out, List.of(), "--x=1,2,3,4,5");
    Pruning pruning =
        new Pruning(
            List.of(rejecting("does not run", "5", "simulator: no")), DESCENDING, 3, List.of());
    assertThat(Tuner.dryRun(cfg, pruning))
        .containsExactly(
            "trial 1/5 --x 1: to run: ringmaster serve --model model --x 1 [predicted 5.0 output"
                + " tok/s, rank 1]",
            "trial 2/5 --x 2: to run: ringmaster serve --model model --x 2 [predicted 4.0 output"
                + " tok/s, rank 2]",
            "trial 3/5 --x 3: to run: ringmaster serve --model model --x 3 [predicted 3.0 output"
                + " tok/s, rank 3]",
            "trial 4/5 --x 4: pruned (simulate-first): predicted 2.0 output tok/s, rank 4 of 4 by"
                + " a fake ranking; --simulate-top 3 runs the best 3",
            "trial 5/5 --x 5: pruned (does not run): simulator: no");
    FakeExecutor ex = new FakeExecutor();
    TuneReport report =
        Tuner.run(cfg, pruning, ex, new PrintStream(new ByteArrayOutputStream(), true));

    assertThat(ex.ran).containsExactly("--x 1", "--x 2", "--x 3");
    List<TrialResult> ev = new EvidenceLog(cfg.evidence()).read();
    TrialResult four = ev.stream().filter(r -> r.id().equals("--x 4")).findFirst().orElseThrow();
    assertThat(four.cause()).isEqualTo("simulate-first");
    assertThat(four.predicted()).isEqualTo(2.0);
    assertThat(four.predictedRank()).isEqualTo(4);
    TrialResult one = ev.stream().filter(r -> r.id().equals("--x 1")).findFirst().orElseThrow();
    assertThat(one.ok()).isTrue();
    assertThat(one.predicted()).isEqualTo(5.0);
    assertThat(one.predictedRank()).isEqualTo(1);
    // measured 10, 20, 30 against predicted 5, 4, 3: exactly the opposite order
    assertThat(report.rankCorrelation()).isEqualTo(-1.0);
    assertThat(report.markdown())
        .contains("| predicted | predicted rank |")
        .contains("Predicted by a fake ranking.")
        .contains("Rank correlation (Spearman) of predicted and measured: -1.00 over 3 trials.")
        .contains("| `--x 4` | simulate-first | predicted 2.0 output tok/s, rank 4 of 4");
  }

  @Test
  void theRankCorrelationIsSpearmans() {
    assertThat(
            Stats.pearson(
                Stats.ranks(List.of(1.0, 2.0, 3.0)), Stats.ranks(List.of(10.0, 20.0, 90.0))))
        .isEqualTo(1.0);
    assertThat(Stats.ranks(List.of(5.0, 1.0, 5.0))).containsExactly(2.5, 1.0, 2.5);
    assertThat(Stats.pearson(new double[] {1, 2}, new double[] {3, 3})).isZero();
  }

  @Test
  void doctorPrunesOnlyPointsUsingAFeatureThisHostLacks(@TempDir Path out) {
    TuneConfig cfg =
        config(out, List.of("--kernel-option", "pdl=true"), "--device=cpu,cuda", "--tp-size=1,2");
    List<Trial> grid = cfg.space().grid();
    DoctorPruning noGpu = new DoctorPruning(FakeFacts.host(), FakeFacts.noGpu(), false);
    assertThat(noGpu.reject(cfg, grid.get(0))).isEmpty(); // cpu, tp 1
    assertThat(noGpu.reject(cfg, grid.get(1))).isEmpty(); // cpu, tp 2: in-process ranks
    assertThat(noGpu.reject(cfg, grid.get(2)))
        .hasValueSatisfying(r -> assertThat(r).startsWith("cuda-device unsupported (hardware)"));
    DoctorPruning oneGpu =
        new DoctorPruning(FakeFacts.host(), FakeFacts.gpus(1, 90, "X", false, true), false);
    assertThat(oneGpu.reject(cfg, grid.get(2))).isEmpty(); // cuda, tp 1, pdl on sm_90
    assertThat(oneGpu.reject(cfg, grid.get(3)))
        .hasValueSatisfying(r -> assertThat(r).startsWith("allreduce-nccl unsupported (hardware)"));
    DoctorPruning ampere =
        new DoctorPruning(FakeFacts.host(), FakeFacts.gpus(1, 80, "X", false, true), false);
    assertThat(ampere.reject(cfg, grid.get(2)))
        .hasValueSatisfying(r -> assertThat(r).startsWith("gpu-kernels unsupported (hardware)"));
    assertThat(DoctorPruning.needsDoctor(cfg)).isTrue();
    assertThat(DoctorPruning.needsDoctor(config(out, List.of(), "--device=cpu"))).isFalse();
    assertThat(
            DoctorPruning.requiredFeatures(
                TrialFlags.parse(
                    List.of(
                        "--device",
                        "cuda",
                        "--disable-cuda-graph",
                        "--tp-size",
                        "2",
                        "--allreduce",
                        "oneshot",
                        "--ep-size",
                        "2",
                        "--moe-a2a-backend",
                        "all-to-all"))))
        .containsExactly(
            "cuda-device", "gpu-kernels", "cublas", "allreduce-oneshot", "expert-all-to-all");
  }

  @Test
  void onAGpuPointDoctorAlsoAsksWhetherTheModelFits(@TempDir Path out) {
    TuneConfig base =
        config(out, List.of("--device", "cuda"), "--mem-fraction-static=0.5,0.0000001");
    TuneConfig cfg =
        new TuneConfig(
            base.javaCommand(),
            repo().resolve("models/sotu-moe"),
            base.fixedArgs(),
            base.space(),
            base.workload(),
            base.startupTimeout(),
            base.runTimeout(),
            base.out(),
            base.objective(),
            base.repeats(),
            null);
    DoctorPruning h200 =
        new DoctorPruning(FakeFacts.host(), FakeFacts.gpus(1, 90, "X", false, true), true);
    List<Trial> grid = cfg.space().grid();
    assertThat(h200.reject(cfg, grid.get(0))).isEmpty();
    assertThat(h200.reject(cfg, grid.get(1)))
        .hasValueSatisfying(
            r -> assertThat(r).startsWith("model-gpu-memory unsupported (hardware): weights"));
  }

  @Test
  void theSimulatorPrunesWhatDoesNotRunAndPredictsTheRest(@TempDir Path out) {
    Path model = repo().resolve("models/sotu-moe");
    SimulatorJudge judge = new SimulatorJudge(Profiles.load("h200"), ModelShapes.load(model));
    TuneConfig cfg = config(out, List.of(), "--tp-size=1,2", "--max-running-requests=1,4");
    List<Trial> grid = cfg.space().grid();
    assertThat(judge.reject(cfg, grid.get(0))).isEmpty();
    assertThat(judge.reject(cfg, grid.get(2)))
        .hasValueSatisfying(r -> assertThat(r).contains("simulator on h200", "--tp-size 2"));
    OptionalDouble one = judge.predict(cfg, grid.get(0));
    OptionalDouble four = judge.predict(cfg, grid.get(1));
    assertThat(one).isPresent();
    assertThat(four.getAsDouble()).isGreaterThan(one.getAsDouble());
    assertThat(judge.predict(cfg, grid.get(2))).isEmpty();
    assertThat(SimulatorJudge.servingConfig(cfg, grid.get(1)).batch()).isEqualTo(4);
    assertThat(SimulatorJudge.servingConfig(cfg, grid.get(1)).contextLen()).isEqualTo(24);
  }

  private static Path repo() {
    Path p = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(p.resolve(".ci"))) {
      p = p.getParent();
    }
    return p;
  }
}
