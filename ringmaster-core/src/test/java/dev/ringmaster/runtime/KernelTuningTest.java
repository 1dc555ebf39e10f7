package dev.ringmaster.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.config.IndexerCacheDtype;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KernelTuningTest {
  /** A valid value other than the default for every key; a new key must be added here. */
  private static final Map<String, String> OTHER =
      Map.ofEntries(
          Map.entry("cpu-threads", "3"),
          Map.entry("cpu-vector-bits", "128"),
          Map.entry("pdl", "false"),
          Map.entry("fused-decode-ops", "false"),
          Map.entry("shared-expert-stream", "false"),
          Map.entry("combine-into-norm", "false"),
          Map.entry("moe-pair-tokens", "1"),
          Map.entry("mla-fused-tokens", "0"),
          Map.entry("mla-fused-max-context", "4096"),
          Map.entry("mla-fused-append", "false"),
          Map.entry("mla-fused-verify", "false"),
          Map.entry("mla-prefill-gemm", "false"),
          Map.entry("mla-expanded-prefill", "false"),
          Map.entry("mla-tensor-cores", "false"),
          Map.entry("mla-stages", "2"),
          Map.entry("moe-grouped-min-tokens", "64"),
          Map.entry("moe-mma-min-tokens", "16"),
          Map.entry("moe-down-rows-per-warp", "2"),
          Map.entry("gemv-rows-per-warp", "4"),
          Map.entry("gemv-split-k", "1"),
          Map.entry("gemv-token-group", "4"),
          Map.entry("quant-one-token", "false"),
          Map.entry("quant-weights-first", "false"),
          Map.entry("moe-shared-fused", "false"),
          Map.entry("fp8-mma-swiglu", "false"),
          Map.entry("dsa-sparse-attention", "false"),
          Map.entry("moe-skip-padding-rows", "false"),
          Map.entry("indexer-cache-dtype", "fp8_e4m3"),
          Map.entry("indexer-fused-ops", "false"),
          Map.entry("indexer-topk-candidates", "false"),
          Map.entry("dsa-dense-decode", "true"),
          Map.entry("indexer-scores-registers", "false"),
          Map.entry("indexer-topk-half-bins", "true"),
          Map.entry("indexer-topk-wide-write", "false"),
          Map.entry("indexer-scores-quad-reduce", "false"),
          Map.entry("quant-moe-mma-min-tokens", "8"),
          Map.entry("indexer-scores-bulk-copy", "true"));

  private static List<String> keyNames() {
    return KernelTuning.keys().stream().map(KernelTuning.Key::name).toList();
  }

  @Test
  void defaultsAreTheMeasuredChoices() {
    KernelTuning d = KernelTuning.defaults();
    assertThat(d.cpuThreads()).isZero();
    assertThat(d.cpuVectorBits()).isZero();
    assertThat(d.pdl()).isTrue();
    assertThat(d.fusedDecodeOps()).isTrue();
    assertThat(d.sharedExpertStream()).isTrue();
    assertThat(d.combineIntoNorm()).isTrue();
    assertThat(d.moePairTokens()).isZero();
    assertThat(d.mlaFusedTokens()).isEqualTo(1);
    assertThat(d.mlaFusedMaxContext()).isEqualTo(1024);
    assertThat(d.mlaFusedAppend()).isTrue();
    assertThat(d.mlaFusedVerify()).isTrue();
    assertThat(d.mlaPrefillGemm()).isTrue();
    assertThat(d.mlaExpandedPrefill()).isTrue();
    assertThat(d.dsaSparseAttention()).isTrue();
    assertThat(d.moeSkipPaddingRows()).isTrue();
    assertThat(d.mlaTensorCores()).isTrue();
    assertThat(d.mlaStages()).isEqualTo(1);
    assertThat(d.moeGroupedMinTokens()).isZero();
    assertThat(d.moeMmaMinTokens()).isEqualTo(8);
    assertThat(d.moeDownRowsPerWarp()).isEqualTo(4);
    assertThat(d.gemvRowsPerWarp()).isEqualTo(1);
    assertThat(d.gemvSplitK()).isEqualTo(4);
    assertThat(d.gemvTokenGroup()).isEqualTo(8);
    assertThat(d.quantOneToken()).isTrue();
    assertThat(d.quantWeightsFirst()).isTrue();
    assertThat(d.moeSharedFused()).isTrue();
    assertThat(d.fp8MmaSwiglu()).isTrue();
    assertThat(d.indexerCacheDtype()).isEqualTo("auto");
    assertThat(d.indexerFusedOps()).isTrue();
    assertThat(d.indexerTopkCandidates()).isTrue();
    assertThat(d.dsaDenseDecode()).isFalse();
    assertThat(d.indexerScoresRegisters()).isTrue();
    assertThat(d.indexerTopkHalfBins()).isFalse();
    assertThat(d.indexerTopkWideWrite()).isTrue();
    assertThat(d.indexerScoresQuadReduce()).isTrue();
    assertThat(d.quantMoeMmaMinTokens()).isEqualTo(2);
    assertThat(d.indexerScoresBulkCopy()).isFalse();
    assertThat(d.indexerCache()).isEqualTo(IndexerCacheDtype.AUTO);
    assertThat(d.with("indexer-cache-dtype", "FP8_E4M3").indexerCache())
        .isEqualTo(IndexerCacheDtype.FP8_E4M3);
    assertThat(KernelTuning.defaults().withOptions(List.of())).isEqualTo(d);
    assertThat(d.describe()).isEmpty();
  }

  @Test
  void oneKeyPerComponentInKebabCase() {
    assertThat(keyNames())
        .hasSize(KernelTuning.class.getRecordComponents().length)
        .doesNotHaveDuplicates()
        .contains("mla-fused-tokens", "gemv-split-k", "cpu-vector-bits", "pdl");
    assertThat(OTHER.keySet()).containsExactlyInAnyOrderElementsOf(keyNames());
    for (KernelTuning.Key k : KernelTuning.keys()) {
      assertThat(k.doc()).as(k.name()).isNotBlank();
      assertThat(KernelTuning.defaults().toMap().get(k.name()))
          .as(k.name())
          .isEqualTo(k.defaultValue());
    }
  }

  @Test
  void everyKeyParsesAndChangesOnlyItsValue() {
    Map<String, Object> defaults = KernelTuning.defaults().toMap();
    for (Map.Entry<String, String> e : OTHER.entrySet()) {
      KernelTuning t =
          KernelTuning.defaults().withOptions(List.of(e.getKey() + "=" + e.getValue()));
      Map<String, Object> m = t.toMap();
      assertThat(String.valueOf(m.get(e.getKey()))).as(e.getKey()).isEqualTo(e.getValue());
      for (String other : defaults.keySet()) {
        if (!other.equals(e.getKey())) {
          assertThat(m.get(other))
              .as(e.getKey() + " leaves " + other)
              .isEqualTo(defaults.get(other));
        }
      }
      assertThat(t.describe()).isEqualTo("--kernel-option " + e.getKey() + "=" + e.getValue());
    }
    KernelTuning t =
        KernelTuning.defaults().withOptions(List.of(" mla-fused-tokens = 2", "pdl=FALSE"));
    assertThat(t.mlaFusedTokens()).isEqualTo(2);
    assertThat(t.pdl()).isFalse();
    assertThat(KernelTuning.defaults().with("mla-stages", 2).mlaStages()).isEqualTo(2);
    assertThat(KernelTuning.defaults().with("pdl", false).pdl()).isFalse();
  }

  @Test
  void laterSettingsWin() {
    KernelTuning t =
        KernelTuning.defaults().withOptions(List.of("mla-fused-tokens=0", "mla-fused-tokens=3"));
    assertThat(t.mlaFusedTokens()).isEqualTo(3);
  }

  @Test
  void unknownKeysAreRefusedNamingTheKnownOnes() {
    assertThatThrownBy(() -> KernelTuning.defaults().withOptions(List.of("mla-fused=1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown kernel option 'mla-fused'")
        .hasMessageContaining("mla-fused-tokens");
    assertThatThrownBy(() -> KernelTuning.defaults().withOptions(List.of("mlaFusedTokens=1")))
        .hasMessageContaining("unknown kernel option 'mlaFusedTokens'");
    assertThatThrownBy(() -> KernelTuning.defaults().withOptions(List.of("pdl")))
        .hasMessageContaining("takes KEY=VALUE, got 'pdl'");
    assertThatThrownBy(() -> KernelTuning.defaults().withOptions(List.of("=1")))
        .hasMessageContaining("takes KEY=VALUE");
  }

  @Test
  void badValuesAreRefusedNamingTheKey() {
    String[][] cases = {
      {"pdl=yes", "kernel option pdl takes true or false, got 'yes'"},
      {"mla-fused-tokens=one", "kernel option mla-fused-tokens takes an integer, got 'one'"},
      {"mla-fused-tokens=-1", "mla-fused-tokens must be at least 0, got -1"},
      {"mla-stages=3", "mla-stages must be 1 or 2, got 3"},
      {"gemv-split-k=3", "gemv-split-k must be 1, 2 or 4, got 3"},
      {"gemv-token-group=6", "gemv-token-group must be 4 or 8, got 6"},
      {"gemv-rows-per-warp=8", "gemv-rows-per-warp must be 1, 2 or 4, got 8"},
      {"moe-down-rows-per-warp=0", "moe-down-rows-per-warp must be 1, 2 or 4, got 0"},
      {"moe-mma-min-tokens=0", "moe-mma-min-tokens must be at least 1, got 0"},
      {"cpu-vector-bits=64", "cpu-vector-bits must be 0, 128, 256 or 512, got 64"},
      {"cpu-threads=-2", "cpu-threads must be at least 0, got -2"},
      {"moe-pair-tokens=", "moe-pair-tokens takes an integer, got ''"},
      {
        "indexer-cache-dtype=fp16",
        "kernel option indexer-cache-dtype must be auto or fp8_e4m3, got 'fp16'"
      },
    };
    for (String[] c : cases) {
      assertThatThrownBy(() -> KernelTuning.defaults().withOptions(List.of(c[0])))
          .as(c[0])
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c[1]);
    }
  }

  @Test
  void jsonRoundTripsEveryValue() throws Exception {
    KernelTuning t = KernelTuning.defaults();
    for (Map.Entry<String, String> e : OTHER.entrySet()) {
      t = t.with(e.getKey(), e.getValue());
    }
    String json = t.toJson();
    KernelTuning back = KernelTuning.defaults().withJson(new ObjectMapper().readTree(json));
    assertThat(back).isEqualTo(t);
    assertThat(new ObjectMapper().readTree(json).get("mla-stages").isInt()).isTrue();
    assertThat(new ObjectMapper().readTree(json).get("pdl").isBoolean()).isTrue();
    assertThat(KernelTuning.defaults().withJson(new ObjectMapper().readTree("{}")))
        .isEqualTo(KernelTuning.defaults());
  }

  @Test
  void configFilesAreReadAndBadOnesNamed(@TempDir Path tmp) throws Exception {
    Path good = tmp.resolve("good.json");
    Files.writeString(good, "{\"mla-fused-tokens\": 0, \"pdl\": false, \"gemv-split-k\": \"2\"}");
    KernelTuning t = KernelTuning.fromJsonFile(good);
    assertThat(t.mlaFusedTokens()).isZero();
    assertThat(t.pdl()).isFalse();
    assertThat(t.gemvSplitK()).isEqualTo(2);

    Path unknown = tmp.resolve("unknown.json");
    Files.writeString(unknown, "{\"fast\": true}");
    assertThatThrownBy(() -> KernelTuning.fromJsonFile(unknown))
        .hasMessageContaining("--kernel-config " + unknown)
        .hasMessageContaining("unknown kernel option 'fast'");
    Path array = tmp.resolve("array.json");
    Files.writeString(array, "[1]");
    assertThatThrownBy(() -> KernelTuning.fromJsonFile(array))
        .hasMessageContaining("a JSON object of option keys");
    Path nested = tmp.resolve("nested.json");
    Files.writeString(nested, "{\"pdl\": {\"on\": true}}");
    assertThatThrownBy(() -> KernelTuning.fromJsonFile(nested))
        .hasMessageContaining("kernel option pdl takes a boolean, an integer or a word");
    Path broken = tmp.resolve("broken.json");
    Files.writeString(broken, "{\"pdl\": ");
    assertThatThrownBy(() -> KernelTuning.fromJsonFile(broken))
        .hasMessageContaining("cannot read it as JSON");
    assertThatThrownBy(() -> KernelTuning.fromJsonFile(tmp.resolve("missing.json")))
        .hasMessageContaining("missing.json: no such file");
  }

  @Test
  void fingerprintDiffersWhenAnyValueDiffers() {
    String base = KernelTuning.defaults().fingerprint();
    assertThat(base)
        .isEqualTo(
            KernelTuning.keys().stream()
                .map(k -> k.name() + "=" + k.defaultValue())
                .collect(Collectors.joining(",")));
    for (Map.Entry<String, String> e : OTHER.entrySet()) {
      String other = KernelTuning.defaults().with(e.getKey(), e.getValue()).fingerprint();
      assertThat(other).as(e.getKey()).isNotEqualTo(base).contains(e.getKey() + "=" + e.getValue());
    }
  }

  @Test
  void helpListsEveryKeyWithItsDefaultAndMeaning() {
    String help = KernelTuning.help();
    assertThat(help.lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(78));
    String flat = help.replaceAll("\\s+", " ");
    for (KernelTuning.Key k : KernelTuning.keys()) {
      assertThat(help).contains("  " + k.name() + " (default " + k.defaultValue() + ")\n");
      assertThat(flat).contains(k.doc());
    }
  }
}
