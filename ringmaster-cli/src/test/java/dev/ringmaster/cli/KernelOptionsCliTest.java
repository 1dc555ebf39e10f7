package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.multinode.Fingerprint;
import dev.ringmaster.runtime.KernelTuning;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code --kernel-option} and {@code --kernel-config}: help, early refusal, JSON, fingerprint. */
class KernelOptionsCliTest {
  private static final Path FIXTURE =
      CliTest.repo().resolve("fixtures/golden/deepseek_v2_qlora_yarn_group");

  @Test
  void helpOfEveryModelCommandListsEveryKeyWithItsDefault() {
    for (String[] cmd :
        new String[][] {
          {"generate", "--help"}, {"serve", "--help"}, {"bench", "one-batch", "--help"}
        }) {
      CliTest.Run r = CliTest.run(cmd);
      assertThat(r.status()).as(String.join(" ", cmd)).isZero();
      assertThat(r.out())
          .contains("--kernel-option=KEY=VALUE")
          .contains("--kernel-config=FILE.json");
      for (KernelTuning.Key k : KernelTuning.keys()) {
        assertThat(r.out())
            .as(String.join(" ", cmd) + ": " + k.name())
            .containsPattern("\\s" + k.name() + "\\s+")
            .contains("(default " + k.defaultValue() + ")");
      }
    }
  }

  @Test
  void badKernelOptionsAreRefusedBeforeTheModelIsRead(@TempDir Path empty) throws Exception {
    // An empty directory: reading the model would fail with another message, so the kernel
    // option's error shows it was checked first.
    Path config = empty.resolve("tuning.json");
    Files.writeString(config, "{\"mla-stages\": 5}");
    String[][] cases = {
      {"unknown kernel option 'bogus'", "generate", "x", "--kernel-option", "bogus=1"},
      {
        "kernel option pdl takes true or false, got 'maybe'",
        "serve",
        "--kernel-option",
        "pdl=maybe"
      },
      {"unknown kernel option 'fast'", "bench", "one-batch", "--kernel-option", "fast=true"},
      {
        "mla-stages must be 1 or 2, got 5",
        "bench",
        "one-batch",
        "--kernel-config",
        config.toString()
      },
      {
        "nope.json: no such file",
        "generate",
        "x",
        "--kernel-config",
        empty.resolve("nope.json").toString()
      },
      {
        "cpu-vector-bits must be 0, 128, 256 or 512, got 96",
        "generate",
        "x",
        "--cpu-vector-bits",
        "96"
      },
      {
        "--indexer-cache-dtype must be auto or fp8_e4m3, got 'fp4'",
        "serve",
        "--indexer-cache-dtype",
        "fp4"
      },
    };
    for (String[] c : cases) {
      String[] args = new String[c.length - 1 + 2];
      System.arraycopy(c, 1, args, 0, c.length - 1);
      args[c.length - 1] = "--model";
      args[c.length] = empty.toString();
      CliTest.Run r = CliTest.run(args);
      assertThat(r.status()).as(String.join(" ", args) + "\n" + r.err()).isEqualTo(2);
      assertThat(r.err().strip()).as(String.join(" ", args)).startsWith("error: ").contains(c[0]);
      assertThat(r.err().strip().lines()).as("one line").hasSize(1);
    }
    // A good option gets as far as reading the (missing) model.
    CliTest.Run ok =
        CliTest.run(
            "bench", "one-batch", "--model", empty.toString(), "--kernel-option", "mla-stages=2");
    assertThat(ok.status()).isEqualTo(2);
    assertThat(ok.err()).doesNotContain("kernel option").contains("config.json");
  }

  @Test
  void generateJsonPrintsTheKernelChoicesAsAConfigThatReadsBack(@TempDir Path tmp)
      throws Exception {
    CliTest.Run r =
        CliTest.run(
            "generate",
            "--model",
            FIXTURE.toString(),
            "--prompt-ids",
            "1,2,3",
            "--max-new-tokens",
            "2",
            "--temperature",
            "0",
            "--ignore-eos",
            "--kernel-option",
            "mla-stages=2",
            "--kernel-option",
            "gemv-split-k=2",
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode tuning = new ObjectMapper().readTree(r.out()).get("kernel_tuning");
    assertThat(tuning.get("mla-stages").asInt()).isEqualTo(2);
    assertThat(tuning.get("gemv-split-k").asInt()).isEqualTo(2);
    assertThat(tuning.get("pdl").asBoolean()).isTrue();
    assertThat(tuning.size()).isEqualTo(KernelTuning.keys().size());
    Path file = tmp.resolve("tuning.json");
    Files.writeString(file, tuning.toString());
    assertThat(KernelTuning.fromJsonFile(file))
        .isEqualTo(KernelTuning.defaults().with("mla-stages", 2).with("gemv-split-k", 2));
  }

  @Test
  void theCudaDocsListEveryKeyWithItsDefault() throws Exception {
    String doc = Files.readString(CliTest.repo().resolve("docs/cuda.md"));
    for (KernelTuning.Key k : KernelTuning.keys()) {
      assertThat(doc).contains("| `" + k.name() + "` | " + k.defaultValue() + " |");
    }
  }

  @CommandLine.Command(name = "probe")
  static final class Probe {
    @CommandLine.Mixin EngineOptions engine = new EngineOptions();
  }

  private static Map<String, String> fingerprint(String... args) {
    Probe p = CommandLine.populateCommand(new Probe(), args);
    p.engine.resolvedDevice = "cpu";
    return p.engine.fingerprint(FIXTURE);
  }

  @Test
  void nodesWithDifferentKernelChoicesDisagreeNamingTheOption(@TempDir Path tmp) throws Exception {
    Map<String, String> plain = fingerprint();
    assertThat(fingerprint("--kernel-option", "pdl=true")).isEqualTo(plain);
    Path config = tmp.resolve("t.json");
    Files.writeString(config, "{\"mla-fused-tokens\": 0}");
    assertThat(Fingerprint.differences(plain, fingerprint("--kernel-config", config.toString()), 1))
        .containsExactly("--kernel-option mla-fused-tokens: 1 on node 0, 0 on node 1");
    assertThat(Fingerprint.differences(plain, fingerprint("--cpu-threads", "3"), 1))
        .containsExactly("--kernel-option cpu-threads: 0 on node 0, 3 on node 1");
    for (KernelTuning.Key k : KernelTuning.keys()) {
      assertThat(plain).as(k.name()).containsKey("--kernel-option " + k.name());
    }
  }
}
