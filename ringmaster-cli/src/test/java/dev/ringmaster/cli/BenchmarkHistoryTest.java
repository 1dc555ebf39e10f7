package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchmarkHistoryTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void floatsAreRoundedToFiveSignificantDigitsAndEverythingElseIsKept() throws Exception {
    JsonNode in =
        JSON.readTree(
            "{\"ms\":23.0260007083416,\"tiny\":1.234567e-9,\"big\":123456789.5,\"zero\":0.0,"
                + "\"n\":7,\"s\":\"x\",\"ok\":true,\"list\":[0.333333333,{\"t\":2.71828182}]}");
    JsonNode out = BenchmarkHistory.rounded(in);
    assertThat(out.get("ms").doubleValue()).isEqualTo(23.026);
    assertThat(out.get("tiny").doubleValue()).isEqualTo(1.2346e-9);
    assertThat(out.get("big").doubleValue()).isEqualTo(123460000.0);
    assertThat(out.get("zero").doubleValue()).isZero();
    assertThat(out.get("n").isInt()).isTrue();
    assertThat(out.get("n").intValue()).isEqualTo(7);
    assertThat(out.get("s").asText()).isEqualTo("x");
    assertThat(out.get("ok").booleanValue()).isTrue();
    assertThat(out.get("list").get(0).doubleValue()).isEqualTo(0.33333);
    assertThat(out.get("list").get(1).get("t").doubleValue()).isEqualTo(2.7183);
    // the input is not modified
    assertThat(in.get("ms").doubleValue()).isEqualTo(23.0260007083416);
  }

  @Test
  void appendWritesOneRoundedRecordPerLine(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("h/history.jsonl");
    BenchmarkHistory.append(file, "b", "cmd 1", JSON.readTree("{\"v\":1.000049999}"), "ref");
    BenchmarkHistory.append(file, "b", "cmd 2", JSON.readTree("{\"v\":2}"), "ref");
    var lines = Files.readAllLines(file);
    assertThat(lines).hasSize(2);
    JsonNode first = JSON.readTree(lines.get(0));
    assertThat(first.get("command").asText()).isEqualTo("cmd 1");
    assertThat(first.get("results").get("v").doubleValue()).isEqualTo(1.0);
    assertThat(JSON.readTree(lines.get(1)).get("results").get("v").intValue()).isEqualTo(2);
  }
}
