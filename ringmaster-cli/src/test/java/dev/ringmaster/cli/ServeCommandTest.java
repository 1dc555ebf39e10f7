package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@code ringmaster serve} as a real process: it prints its address, serves, and exits 0 on
 * SIGTERM.
 */
class ServeCommandTest {
  @Test
  void servesThenDrainsAndExitsZeroOnSigterm() throws Exception {
    Path err = Files.createTempFile("serve", ".err");
    Process p = serve(err, "--max-total-tokens", "4096", "--cuda-graph-max-bs", "128");
    try {
      String url = servingUrl(p);
      assertThat(url).startsWith("http://127.0.0.1:");
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> health =
          http.send(
              HttpRequest.newBuilder(URI.create(url + "/health")).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(health.statusCode()).isEqualTo(200);
      HttpRequest gen =
          HttpRequest.newBuilder(URI.create(url + "/generate"))
              .timeout(Duration.ofSeconds(60))
              .POST(
                  HttpRequest.BodyPublishers.ofString(
                      "{\"text\": \"the union\", \"stream\": true, \"sampling_params\":"
                          + " {\"max_new_tokens\": 200, \"ignore_eos\": true}}"))
              .build();
      // Headers arrive with the first event, so the request is running when this returns.
      HttpResponse<Stream<String>> inflight = http.send(gen, HttpResponse.BodyHandlers.ofLines());
      assertThat(inflight.statusCode()).isEqualTo(200);
      p.destroy(); // SIGTERM: the running stream is allowed to finish
      List<String> events = inflight.body().filter(l -> l.startsWith("data: ")).toList();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).isZero();
      assertThat(events.getLast()).isEqualTo("data: [DONE]");
      assertThat(events.get(events.size() - 2)).contains("\"completion_tokens\":200");
    } finally {
      p.destroyForcibly();
      Files.deleteIfExists(err);
    }
  }

  @Test
  void derivesItsLimitsAndReportsThemAtStartUpAndInServerInfo() throws Exception {
    Path err = Files.createTempFile("serve", ".err");
    Process p = serve(err, "--max-total-tokens", "48");
    try {
      String url = servingUrl(p);
      assertThat(url).isNotNull();
      // 48 KV tokens: half of them bound the running requests below the CPU's 32.
      assertThat(Files.readString(err))
          .contains("max running requests 24 (from 48 KV tokens and no decode graphs)")
          .contains("chunked prefill 1024 (default)")
          .contains("overlap schedule on");
      String info =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create(url + "/get_server_info")).build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      var j = new com.fasterxml.jackson.databind.ObjectMapper().readTree(info);
      assertThat(j.get("max_running_requests").asInt()).isEqualTo(24);
      assertThat(j.get("max_running_requests_derived").asBoolean()).isTrue();
      assertThat(j.get("chunked_prefill_size").asInt()).isEqualTo(1024);
      assertThat(j.get("internal_states").get(0).get("max_running_requests").asInt()).isEqualTo(24);
      // The warm-up requests went through the HTTP stack before the address was printed.
      assertThat(Files.readString(err)).contains("ringmaster: warm-up requests, ");
      assertThat(requestsFinished(url)).isEqualTo(2);
    } finally {
      p.destroyForcibly();
      Files.deleteIfExists(err);
    }
  }

  @Test
  void skipServerWarmupSendsNoRequestBeforeServing() throws Exception {
    Path err = Files.createTempFile("serve", ".err");
    Process p = serve(err, "--skip-server-warmup");
    try {
      String url = servingUrl(p);
      assertThat(url).isNotNull();
      assertThat(Files.readString(err)).doesNotContain("warm-up requests");
      assertThat(requestsFinished(url)).isZero();
    } finally {
      p.destroyForcibly();
      Files.deleteIfExists(err);
    }
  }

  /** {@code serve} on the basic golden fixture at a free port, stderr to {@code err}. */
  private static Process serve(Path err, String... flags) throws Exception {
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> cmd =
        new java.util.ArrayList<>(
            List.of(
                java.toString(),
                "--add-modules",
                "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx512m",
                "-cp",
                cp,
                "dev.ringmaster.cli.Main",
                "serve",
                "--model",
                fixture.toString(),
                "--port",
                "0"));
    cmd.addAll(List.of(flags));
    return new ProcessBuilder(cmd).redirectError(err.toFile()).start();
  }

  /** The address of the {@code serving at} line, or null if the process ends without one. */
  private static String servingUrl(Process p) throws java.io.IOException {
    BufferedReader out =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    for (String line; (line = out.readLine()) != null; ) {
      if (line.startsWith("ringmaster: serving at ")) {
        return line.substring("ringmaster: serving at ".length()).strip();
      }
    }
    return null;
  }

  /** {@code ringmaster:num_requests_total} from the server's /metrics. */
  private static long requestsFinished(String url) throws Exception {
    String metrics =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(url + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    return metrics
        .lines()
        .filter(l -> l.startsWith("ringmaster:num_requests_total"))
        .mapToLong(l -> (long) Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)))
        .sum();
  }
}
