package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.tokenizer.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DatasetsTest {
  static Path tokenizerDir() {
    Path p = Path.of("").toAbsolutePath();
    while (!Files.isDirectory(p.resolve("fixtures/golden/deepseek_v3_basic"))) {
      p = p.getParent();
    }
    return p.resolve("fixtures/golden/deepseek_v3_basic");
  }

  static Tokenizer tokenizer() {
    return Tokenizer.load(tokenizerDir());
  }

  static BenchServeConfig.Dataset spec(String name, Path path, int n, Integer fixedOut) {
    return new BenchServeConfig.Dataset(
        name,
        path,
        n,
        fixedOut,
        null,
        16,
        8,
        0.5,
        new BenchServeConfig.SharedPrefix(3, 4, 20, 6, 5, 1.0));
  }

  private static final String SHAREGPT =
      """
      [
        {"id": "a", "conversations": [
          {"from": "human", "value": "the state of the union is strong"},
          {"from": "gpt", "value": "and the people of the nation are free and prosperous"}]},
        {"id": "b", "conversations": [{"from": "human", "value": "only one turn here"}]},
        {"id": "c", "conversation": [
          {"from": "human", "value": "congress shall make no law"},
          {"from": "gpt", "value": "respecting an establishment of religion"},
          {"from": "human", "value": "a third turn, ignored"}]},
        {"id": "d", "conversations": [
          {"from": "human", "value": "x"},
          {"from": "gpt", "value": "a reply to a prompt too short to time"}]}
      ]
      """;

  @Test
  void shareGptKeepsTwoTurnConversationsWithTheirTokenCounts(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("sharegpt.json");
    Files.writeString(file, SHAREGPT);
    Tokenizer tok = tokenizer();
    List<DatasetRow> rows = Datasets.make(spec("sharegpt", file, 10, null), tok, 1);
    assertThat(rows.stream().map(DatasetRow::text).collect(Collectors.toSet()))
        .isEqualTo(Set.of("the state of the union is strong", "congress shall make no law"));
    for (DatasetRow r : rows) {
      assertThat(r.promptLen()).isEqualTo(tok.encode(r.text()).length);
      String reply =
          r.text().startsWith("the state")
              ? "and the people of the nation are free and prosperous"
              : "respecting an establishment of religion";
      assertThat(r.outputLen()).isEqualTo(tok.encode(reply, false).length);
    }
    List<DatasetRow> one = Datasets.make(spec("sharegpt", file, 1, 12), tok, 1);
    assertThat(one).hasSize(1);
    assertThat(one.getFirst().outputLen()).isEqualTo(12);
    // without a tokenizer the server counts the prompt; the output length must be fixed
    List<DatasetRow> counted = Datasets.make(spec("sharegpt", file, 10, 12), null, 1);
    assertThat(counted).allMatch(r -> r.promptLen() == -1 && r.outputLen() == 12);
    assertThatThrownBy(() -> Datasets.make(spec("sharegpt", file, 10, null), null, 1))
        .isInstanceOf(BenchServeException.class)
        .hasMessageContaining("--tokenizer");
  }

  @Test
  void shareGptFileErrorsNameTheFile(@TempDir Path tmp) throws Exception {
    Tokenizer tok = tokenizer();
    Path missing = tmp.resolve("nope.json");
    assertThatThrownBy(() -> Datasets.make(spec("sharegpt", missing, 4, null), tok, 1))
        .isInstanceOf(BenchServeException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("file not found");
    Path bad = tmp.resolve("bad.json");
    Files.writeString(bad, "{\"conversations\": [");
    assertThatThrownBy(() -> Datasets.make(spec("sharegpt", bad, 4, null), tok, 1))
        .hasMessageContaining("not valid JSON");
    Path object = tmp.resolve("object.json");
    Files.writeString(object, "{\"conversations\": []}");
    assertThatThrownBy(() -> Datasets.make(spec("sharegpt", object, 4, null), tok, 1))
        .hasMessageContaining("expected a JSON list");
  }

  @Test
  void randomLengthsStayInTheirRangeAndTheSeedFixesThePrompts() {
    Tokenizer tok = tokenizer();
    List<DatasetRow> rows = Datasets.make(spec("random", null, 50, null), tok, 3);
    assertThat(rows).hasSize(50);
    for (DatasetRow r : rows) {
      assertThat(r.promptLen()).isBetween(8, 16);
      assertThat(r.outputLen()).isBetween(4, 8);
      assertThat(r.text()).isNotEmpty();
      assertThat(r.ids()).isNull();
    }
    assertThat(rows.stream().mapToInt(DatasetRow::promptLen).distinct().count()).isGreaterThan(3);
    assertThat(Datasets.make(spec("random", null, 50, null), tok, 3))
        .extracting(DatasetRow::text)
        .isEqualTo(rows.stream().map(DatasetRow::text).toList());
    assertThat(Datasets.make(spec("random", null, 50, null), tok, 4))
        .extracting(DatasetRow::text)
        .isNotEqualTo(rows.stream().map(DatasetRow::text).toList());
    int[] fixed = Datasets.randomLens(16, 1.0, 20, new Random(1));
    assertThat(Arrays.stream(fixed).distinct().toArray()).containsExactly(16);
    int[] wide = Datasets.randomLens(4, 0.0, 400, new Random(1));
    assertThat(Arrays.stream(wide).distinct().sorted().toArray()).containsExactly(1, 2, 3, 4);
  }

  @Test
  void randomIdsAreOrdinaryTokensOfTheRequestedLength() {
    Tokenizer tok = tokenizer();
    List<DatasetRow> rows = Datasets.make(spec("random-ids", null, 20, null), tok, 5);
    for (DatasetRow r : rows) {
      assertThat(r.text()).isNull();
      assertThat(r.ids()).hasSize(r.promptLen());
      for (int id : r.ids()) {
        assertThat(tok.isSpecial(id)).as("id %d", id).isFalse();
        assertThat(id).isBetween(0, tok.vocabSize() - 1);
      }
    }
  }

  @Test
  void randomTakesTextFromADatasetFileWhenGiven(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("sharegpt.json");
    Files.writeString(file, SHAREGPT);
    Tokenizer tok = tokenizer();
    List<DatasetRow> rows = Datasets.make(spec("random-ids", file, 6, null), tok, 2);
    Set<Integer> fromFile =
        List.of("the state of the union is strong", "congress shall make no law", "x").stream()
            .flatMap(s -> Arrays.stream(tok.encode(s, false)).boxed())
            .collect(Collectors.toSet());
    for (DatasetRow r : rows) {
      assertThat(Arrays.stream(r.ids()).boxed().toList()).allMatch(fromFile::contains);
    }
  }

  @Test
  void sharedPrefixGroupsShareTheirSystemPromptAsTokenIds() {
    Tokenizer tok = tokenizer();
    List<DatasetRow> rows = Datasets.make(spec("generated-shared-prefix", null, 12, null), tok, 9);
    assertThat(rows).hasSize(12);
    // 20-token system prompts, 6-token questions (range ratio 1: exact lengths)
    var prefixes =
        rows.stream()
            .collect(
                Collectors.groupingBy(
                    r -> java.util.Arrays.toString(java.util.Arrays.copyOf(r.ids(), 20))));
    assertThat(prefixes).hasSize(3);
    assertThat(prefixes.values()).allMatch(g -> g.size() == 4);
    for (DatasetRow r : rows) {
      assertThat(r.text()).isNull();
      assertThat(r.ids()).hasSize(26);
      assertThat(r.promptLen()).isEqualTo(26);
      assertThat(r.outputLen()).isEqualTo(5);
    }
    List<DatasetRow> again = Datasets.make(spec("generated-shared-prefix", null, 12, null), tok, 9);
    for (int i = 0; i < rows.size(); i++) {
      assertThat(again.get(i).ids())
          .as("same seed, same prompts")
          .containsExactly(rows.get(i).ids());
    }
  }
}
