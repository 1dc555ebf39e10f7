package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.util.Npy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code generate --dump-logits / --force-ids} and {@code compare-logits}, end to end. */
class LogitsCliTest {
  private static final int N = 8;
  private static final ObjectMapper JSON = new ObjectMapper();

  private static Path fixture(String name) {
    return CliTest.repo().resolve("fixtures/golden/" + name);
  }

  /** Greedy generate of N tokens from the fixture's prompt, as JSON, plus {@code extra} flags. */
  private static JsonNode generate(String model, String... extra) throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "generate",
                "--model",
                fixture(model).toString(),
                "--prompt-ids",
                "5,17,42,99,3",
                "--max-new-tokens",
                String.valueOf(N),
                "--temperature",
                "0",
                "--ignore-eos",
                "--json"));
    args.addAll(List.of(extra));
    CliTest.Run r = CliTest.run(args.toArray(String[]::new));
    assertThat(r.status()).as(r.err()).isZero();
    return JSON.readTree(r.out());
  }

  private static String ids(JsonNode array) {
    return IntStream.range(0, array.size())
        .mapToObj(i -> array.get(i).asText())
        .collect(Collectors.joining(","));
  }

  private static JsonNode compare(int expectedStatus, Path ref, Path run) throws Exception {
    CliTest.Run r = CliTest.run("compare-logits", ref.toString(), run.toString(), "--json");
    assertThat(r.status()).as(r.out() + r.err()).isEqualTo(expectedStatus);
    return JSON.readTree(r.out());
  }

  @Test
  void aRunForcedWithTheReferenceTokensReproducesItsLogits(@TempDir Path tmp) throws Exception {
    Path ref = tmp.resolve("ref.npy");
    Path forced = tmp.resolve("forced.npy");
    JsonNode free = generate("deepseek_v3_basic", "--dump-logits", ref.toString());
    assertThat(free.get("argmax_ids")).isEqualTo(free.get("output_ids"));
    JsonNode f =
        generate(
            "deepseek_v3_basic",
            "--dump-logits",
            forced.toString(),
            "--force-ids",
            ids(free.get("output_ids")));
    assertThat(f.get("output_ids")).isEqualTo(free.get("output_ids"));

    Npy.Matrix m = Npy.read(ref);
    assertThat(m.shape()).isEqualTo("(" + N + ", 320)");
    JsonNode c = compare(0, ref, forced);
    assertThat(c.get("pass").asBoolean()).isTrue();
    assertThat(c.get("steps").asInt()).isEqualTo(N);
    assertThat(c.get("equal_argmax_steps").asInt()).isEqualTo(N);
    assertThat(c.get("first_divergence_step").isNull()).isTrue();
    assertThat(c.get("margin_at_divergence").isNull()).isTrue();
    assertThat(c.get("max_rel_error").asDouble()).isZero();
    assertThat(c.get("per_step")).hasSize(N);
    assertThat(c.get("per_step").get(0).get("ref_argmax")).isEqualTo(free.get("output_ids").get(0));

    CliTest.Run table = CliTest.run("compare-logits", ref.toString(), forced.toString());
    assertThat(table.status()).isZero();
    assertThat(table.out())
        .contains("steps compared: " + N)
        .contains("first argmax divergence: none")
        .contains("PASS");
  }

  @Test
  void otherForcedTokensKeepStepZeroAndChangeTheRest(@TempDir Path tmp) throws Exception {
    Path ref = tmp.resolve("ref.npy");
    Path other = tmp.resolve("other.npy");
    JsonNode free = generate("deepseek_v3_basic", "--dump-logits", ref.toString());
    int[] forced = new int[N];
    for (int i = 0; i < N; i++) {
      forced[i] = (free.get("output_ids").get(i).asInt() + 11) % 320;
    }
    String forcedIds =
        Arrays.stream(forced).mapToObj(String::valueOf).collect(Collectors.joining(","));
    JsonNode f =
        generate("deepseek_v3_basic", "--dump-logits", other.toString(), "--force-ids", forcedIds);
    assertThat(ids(f.get("output_ids"))).isEqualTo(forcedIds);
    // Step 0 saw only the prompt: the model's own pick, not the forced one.
    assertThat(f.get("argmax_ids").get(0)).isEqualTo(free.get("output_ids").get(0));

    Npy.Matrix a = Npy.read(ref);
    Npy.Matrix b = Npy.read(other);
    assertThat(row(b, 0)).containsExactly(row(a, 0));
    for (int s = 1; s < N; s++) {
      assertThat(row(b, s)).as("step %d", s).isNotEqualTo(row(a, s));
    }
    JsonNode c = compare(1, ref, other);
    assertThat(c.get("pass").asBoolean()).isFalse();
    assertThat(c.get("per_step").get(0).get("rel_error").asDouble()).isZero();
    assertThat(c.get("max_rel_error").asDouble()).isGreaterThan(0.02);
    assertThat(c.get("failures").get(0).asText()).contains("relative error");
  }

  @Test
  void tensorParallelAgainstOneRankUnderForcing(@TempDir Path tmp) throws Exception {
    Path one = tmp.resolve("tp1.npy");
    Path two = tmp.resolve("tp2.npy");
    JsonNode ref = generate("qwen3_moe_basic", "--dump-logits", one.toString());
    generate(
        "qwen3_moe_basic",
        "--tp-size",
        "2",
        "--dump-logits",
        two.toString(),
        "--force-ids",
        ids(ref.get("output_ids")));
    JsonNode c = compare(0, one, two);
    assertThat(c.get("max_rel_error").asDouble())
        .isLessThan(1e-4); // f32 on the CPU: sum order only
  }

  @Test
  void mistakesAreOneLineErrors(@TempDir Path tmp) throws Exception {
    Path a = tmp.resolve("a.npy");
    Path b = tmp.resolve("b.npy");
    Npy.write(a, new Npy.Matrix(2, 3, new float[6]));
    Npy.write(b, new Npy.Matrix(3, 3, new float[9]));
    String model = fixture("deepseek_v3_basic").toString();
    String[][] cases = {
      {"compare-logits", a.toString(), b.toString()},
      {"compare-logits", a.toString(), tmp.resolve("missing.npy").toString()},
      {"compare-logits", a.toString(), a.toString(), "--rtol", "-1"},
      {
        "generate",
        "--model",
        model,
        "--prompt-ids",
        "1,2",
        "--max-new-tokens",
        "3",
        "--force-ids",
        "4,5"
      },
      {
        "generate",
        "--model",
        model,
        "--prompt-ids",
        "1,2",
        "--max-new-tokens",
        "2",
        "--force-ids",
        "4,320"
      },
    };
    String[] expected = {
      "shapes differ: REF (2, 3), RUN (3, 3)",
      "missing.npy: no such file",
      "--rtol",
      "--force-ids has 2 ids but --max-new-tokens is 3",
      "token id 320 is outside the vocabulary",
    };
    for (int i = 0; i < cases.length; i++) {
      CliTest.Run r = CliTest.run(cases[i]);
      assertThat(r.status()).as(Arrays.toString(cases[i]) + " -> " + r.err()).isEqualTo(2);
      assertThat(r.err()).startsWith("error: ").contains(expected[i]).doesNotContain("\tat ");
    }
  }

  private static float[] row(Npy.Matrix m, int r) {
    return Arrays.copyOfRange(m.data(), r * m.cols(), (r + 1) * m.cols());
  }
}
