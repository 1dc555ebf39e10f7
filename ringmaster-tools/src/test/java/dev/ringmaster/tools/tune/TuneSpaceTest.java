package dev.ringmaster.tools.tune;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The grid, the trial arguments, failure causes and the evidence file. */
class TuneSpaceTest {
  @Test
  void theGridIsTheCartesianProductFirstDimensionSlowest() {
    TuneSpace s = TuneSpace.parse(List.of("cpu-threads=1,2", "--max-running-requests=4,8,16"));
    List<Trial> g = s.grid();
    assertThat(g).hasSize(6);
    assertThat(g.get(0).args())
        .containsExactly("--kernel-option", "cpu-threads=1", "--max-running-requests", "4");
    assertThat(g.get(5).id()).isEqualTo("--kernel-option cpu-threads=2 --max-running-requests 16");
    assertThat(g.get(5).number()).isEqualTo(6);
    assertThat(TuneSpace.parse(List.of()).grid())
        .singleElement()
        .extracting(Trial::id)
        .isEqualTo("(defaults)");
  }

  @Test
  void switchesAreTheFlagAloneOrLeftOut() {
    assertThat(new Trial(1, Map.of("--disable-cuda-graph", "true")).args())
        .containsExactly("--disable-cuda-graph");
    assertThat(new Trial(1, Map.of("--disable-cuda-graph", "false")).args()).isEmpty();
  }

  @Test
  void badSpecsAreRefusedByName() {
    assertThatThrownBy(() -> TuneSpace.parse(List.of("--tp-size")))
        .hasMessageContaining("write NAME=V1,V2");
    assertThatThrownBy(() -> TuneSpace.parse(List.of("warp=1,2")))
        .hasMessageContaining("neither a flag");
    assertThatThrownBy(() -> TuneSpace.parse(List.of("pdl=true", "pdl=false")))
        .hasMessageContaining("twice");
    assertThatThrownBy(() -> TuneSpace.parse(List.of("--tp-size=1,,2")))
        .hasMessageContaining("empty value");
  }

  @Test
  void causesAreReadFromTheExitStatusAndTheLog() {
    assertThat(FailureCause.classify(2, List.of("error: --tp-size must be at least 1")))
        .isEqualTo("refused flags");
    assertThat(FailureCause.classify(1, List.of("java.lang.OutOfMemoryError: Java heap space")))
        .isEqualTo("out of memory");
    assertThat(FailureCause.classify(1, List.of("cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY")))
        .isEqualTo("out of memory");
    assertThat(FailureCause.classify(1, List.of("java.lang.AssertionError: bad routing")))
        .isEqualTo("assertion");
    assertThat(FailureCause.classify(134, List.of("something"))).isEqualTo("crashed");
    assertThat(
            FailureCause.lastError(
                List.of(
                    "loading", "java.lang.IllegalStateException: boom", "\tat x.y(Z.java:1)", "")))
        .isEqualTo("java.lang.IllegalStateException: boom");
    assertThat(FailureCause.lastError(List.of("error: first", "noise", "error: last", "more")))
        .isEqualTo("error: last");
    assertThat(FailureCause.lastError(List.of("a", "b"))).isEqualTo("b");
  }

  @Test
  void theEvidenceFileRoundTripsAndIgnoresATornLastLine(@TempDir Path dir) throws Exception {
    EvidenceLog log = new EvidenceLog(dir.resolve("e.jsonl"));
    assertThat(log.read()).isEmpty();
    TrialResult r =
        new TrialResult(
            "--x 1",
            Map.of("--x", "1"),
            "ok",
            "done",
            "",
            null,
            "",
            12.5,
            Map.of("output_throughput", 12.5),
            3.0,
            List.of("java", "serve"),
            "l.log",
            List.of(12.0, 12.5, 13.0),
            1.0);
    log.append(r);
    log.append(
        new TrialResult(
            "--x 2",
            Map.of("--x", "2"),
            "failed",
            "start-up",
            "refused flags",
            2,
            "error: bad",
            null,
            Map.of(),
            0.4,
            List.of(),
            "l2.log",
            List.of(),
            null));
    Files.writeString(
        log.file(), "{\"id\": \"--x 3\", \"sta", java.nio.file.StandardOpenOption.APPEND);
    List<TrialResult> back = log.read();
    assertThat(back).hasSize(2);
    assertThat(back.get(0)).isEqualTo(r);
    assertThat(back.get(1).exitCode()).isEqualTo(2);
    assertThat(back.get(1).samples()).isEmpty();
    assertThat(back.get(1).spread()).isNull();
    // a record written before repeats existed: one run, its objective the only sample
    Files.writeString(
        log.file(),
        "{\"id\":\"--x 4\",\"status\":\"ok\",\"objective\":7.0,\"settings\":{}}\n",
        java.nio.file.StandardOpenOption.TRUNCATE_EXISTING);
    TrialResult old = log.read().getFirst();
    assertThat(old.samples()).containsExactly(7.0);
    assertThat(old.spread()).isZero();
    log.append(r);
    Files.writeString(log.file(), "garbage\n" + Files.readString(log.file()));
    assertThatThrownBy(log::read).hasMessageContaining("line 1 is not a trial record");
  }
}
