package dev.ringmaster.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code generate --nnodes 2} (and {@code serve}) as a user runs it: every node a separate JVM
 * started from this build, talking over real sockets. Node 0 prints the single-rank greedy tokens
 * and serves them with the prefix cache on; killing either node mid-run makes the other stop
 * promptly with a message naming it; usage mistakes are one-line errors.
 */
class MultiNodeCliTest {
  private final List<Process> started = new ArrayList<>();
  @TempDir Path tmp;

  @AfterEach
  void stopEverything() {
    started.forEach(Process::destroyForcibly);
  }

  /** A node: a JVM running the CLI with {@code args}, output to files under tmp. */
  private record Node(Process process, Path out, Path err) {
    String stdout() throws IOException {
      return Files.readString(out, StandardCharsets.UTF_8);
    }

    String stderr() throws IOException {
      return Files.readString(err, StandardCharsets.UTF_8);
    }
  }

  private Node launch(String name, List<String> args) throws IOException {
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(
        List.of(
            "--add-modules",
            "jdk.incubator.vector",
            "--enable-native-access=ALL-UNNAMED",
            "-Xmx512m",
            "-cp",
            cp,
            "dev.ringmaster.cli.Main"));
    cmd.addAll(args);
    Path out = tmp.resolve(name + ".out");
    Path err = tmp.resolve(name + ".err");
    Process p =
        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    started.add(p);
    return new Node(p, out, err);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static List<String> nodeArgs(List<String> command, int rank, int port) {
    List<String> a = new ArrayList<>(command);
    a.addAll(
        List.of(
            "--tp-size",
            "2",
            "--nnodes",
            "2",
            "--node-rank",
            String.valueOf(rank),
            "--dist-init-addr",
            "127.0.0.1:" + port,
            "--dist-timeout",
            "60",
            "--cpu-threads",
            "1"));
    return a;
  }

  private static int exit(Node n, Duration within) throws Exception {
    assertThat(n.process().waitFor(within.toMillis(), TimeUnit.MILLISECONDS))
        .as("exited within %s; stderr: %s", within, n.stderr())
        .isTrue();
    return n.process().exitValue();
  }

  private static void await(Node n, Predicate<String> stdout, Duration within) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    while (!stdout.test(n.stdout())) {
      assertThat(n.process().isAlive()).as("still running; stderr: %s", n.stderr()).isTrue();
      assertThat(System.nanoTime()).as("waited %s", within).isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  @Test
  void twoNodeProcessesReproduceTheSingleRankGreedyTokens() throws Exception {
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v2_qlora_yarn_group");
    JsonNode ref = CliTest.reference(fixture);
    String ids =
        StreamSupport.stream(ref.get("prompt_ids").spliterator(), false)
            .map(JsonNode::asText)
            .collect(Collectors.joining(","));
    List<String> generate =
        List.of(
            "generate",
            "--model",
            fixture.toString(),
            "--prompt-ids",
            ids,
            "--max-new-tokens",
            String.valueOf(ref.get("greedy_ids").size()),
            "--temperature",
            "0",
            "--ignore-eos",
            "--json");
    int port = freePort();
    Node follower = launch("node1", nodeArgs(generate, 1, port));
    Node leader = launch("node0", nodeArgs(generate, 0, port));
    assertThat(exit(leader, Duration.ofSeconds(60))).as(leader.stderr()).isZero();
    assertThat(exit(follower, Duration.ofSeconds(20))).as(follower.stderr()).isZero();
    JsonNode o = new ObjectMapper().readTree(leader.stdout());
    assertThat(o.get("output_ids")).isEqualTo(ref.get("greedy_ids"));
    assertThat(leader.stderr()).contains("node 0: all 2 nodes ready");
    assertThat(follower.stdout()).as("node 1 prints no result of its own").isEmpty();
    assertThat(follower.stderr())
        .contains("node 1 of 2: serving node 0 at 127.0.0.1:" + port)
        .contains("node 1 of 2: node 0 finished; exiting");
  }

  /**
   * The verification workflow over two nodes: a one-rank reference run, then TP 2 over two node
   * processes fed the reference's tokens (the same flags on both nodes; node 1 only runs its
   * ranks), and compare-logits between the two dumps.
   */
  @Test
  void twoNodeForcedRunMatchesTheOneRankLogits() throws Exception {
    String model = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic").toString();
    List<String> base =
        List.of(
            "generate",
            "--model",
            model,
            "--prompt-ids",
            "5,17,42",
            "--max-new-tokens",
            "6",
            "--temperature",
            "0",
            "--ignore-eos",
            "--json");
    Path ref = tmp.resolve("ref.npy");
    List<String> one = new ArrayList<>(base);
    one.addAll(List.of("--dump-logits", ref.toString()));
    CliTest.Run r = CliTest.run(one.toArray(String[]::new));
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode refOut = new ObjectMapper().readTree(r.out());
    String ids =
        StreamSupport.stream(refOut.get("output_ids").spliterator(), false)
            .map(JsonNode::asText)
            .collect(Collectors.joining(","));
    Path run = tmp.resolve("tp2.npy");
    List<String> two = new ArrayList<>(base);
    two.addAll(List.of("--dump-logits", run.toString(), "--force-ids", ids));
    int port = freePort();
    Node follower = launch("node1", nodeArgs(two, 1, port));
    Node leader = launch("node0", nodeArgs(two, 0, port));
    assertThat(exit(leader, Duration.ofSeconds(60))).as(leader.stderr()).isZero();
    assertThat(exit(follower, Duration.ofSeconds(20))).as(follower.stderr()).isZero();
    JsonNode o = new ObjectMapper().readTree(leader.stdout());
    assertThat(o.get("output_ids")).isEqualTo(refOut.get("output_ids"));
    CliTest.Run c = CliTest.run("compare-logits", ref.toString(), run.toString(), "--json");
    assertThat(c.status()).as(c.out() + c.err()).isZero();
    assertThat(new ObjectMapper().readTree(c.out()).get("max_rel_error").asDouble())
        .isLessThan(1e-4);
  }

  /**
   * {@code serve} over two node processes with the prefix cache on: a prompt sent twice gets the
   * one-rank greedy tokens both times, the second from cached pages; after {@code /flush_cache} no
   * KV block is used, and node 1 exits holding no cache and no page.
   */
  @Test
  void twoNodeServeRunsThePrefixCacheAndLeavesNoPageOnEitherNode() throws Exception {
    String model = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic").toString();
    String ids = "5,17,42,99,3,250,7,81,12,64,150,33,9,201,44,18,77,120,6,300,28,55";
    CliTest.Run r =
        CliTest.run(
            "generate",
            "--model",
            model,
            "--prompt-ids",
            ids,
            "--max-new-tokens",
            "6",
            "--temperature",
            "0",
            "--ignore-eos",
            "--json");
    assertThat(r.status()).as(r.err()).isZero();
    JsonNode want = new ObjectMapper().readTree(r.out()).get("output_ids");
    List<String> serve =
        List.of(
            "serve",
            "--model",
            model,
            "--port",
            "0",
            "--page-size",
            "4",
            "--max-total-tokens",
            "4096");
    int port = freePort();
    Node follower = launch("node1", nodeArgs(serve, 1, port));
    Node leader = launch("node0", nodeArgs(serve, 0, port));
    await(leader, s -> s.contains("ringmaster: serving at "), Duration.ofSeconds(60));
    String url =
        leader
            .stdout()
            .lines()
            .filter(l -> l.startsWith("ringmaster: serving at "))
            .findFirst()
            .orElseThrow()
            .substring("ringmaster: serving at ".length())
            .strip();
    HttpClient http = HttpClient.newHttpClient();
    String body =
        "{\"input_ids\": ["
            + ids
            + "], \"sampling_params\": {\"temperature\": 0, \"max_new_tokens\": 6,"
            + " \"ignore_eos\": true}}";
    JsonNode first = post(http, url + "/generate", body);
    JsonNode second = post(http, url + "/generate", body);
    assertThat(first.get("output_ids")).isEqualTo(want);
    assertThat(second.get("output_ids")).as("with cached pages").isEqualTo(want);
    assertThat(first.at("/meta_info/cached_tokens").asInt()).isZero();
    // 22 prompt tokens in pages of 4: the five whole pages before the last token.
    assertThat(second.at("/meta_info/cached_tokens").asInt()).isEqualTo(20);
    assertThat(post(http, url + "/flush_cache", "").get("flushed_pages").asInt()).isPositive();
    JsonNode info =
        new ObjectMapper()
            .readTree(
                http.send(
                        HttpRequest.newBuilder(URI.create(url + "/get_server_info")).build(),
                        HttpResponse.BodyHandlers.ofString())
                    .body());
    assertThat(info.at("/kv_cache/used_blocks").asInt()).isZero();
    assertThat(info.at("/radix_cache/cached_pages").asInt()).isZero();
    leader.process().destroy(); // SIGTERM: node 0 drains, sends what is pending, stops node 1
    assertThat(exit(leader, Duration.ofSeconds(60))).as(leader.stderr()).isZero();
    assertThat(exit(follower, Duration.ofSeconds(20))).as(follower.stderr()).isZero();
    assertThat(leader.stderr()).doesNotContain("radix cache off");
    assertThat(follower.stderr()).contains("it left 0 caches and 0 KV pages open here");
  }

  private static JsonNode post(HttpClient http, String url, String body) throws Exception {
    HttpResponse<String> resp =
        http.send(
            HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(resp.statusCode()).as(resp.body()).isEqualTo(200);
    return new ObjectMapper().readTree(resp.body());
  }

  private static List<String> longRun() {
    // The default model, 1000 tokens: the test kills a node once the first token is out, long
    // before the run could end.
    return List.of(
        "generate",
        "--model",
        CliTest.repo().resolve("models/sotu-moe").toString(),
        "We the people",
        "--max-new-tokens",
        "1000",
        "--ignore-eos",
        "--temperature",
        "0");
  }

  @Test
  void killingNodeOneMidRunFailsNodeZeroNamingIt() throws Exception {
    int port = freePort();
    Node follower = launch("node1", nodeArgs(longRun(), 1, port));
    Node leader = launch("node0", nodeArgs(longRun(), 0, port));
    await(leader, s -> s.length() > "We the people".length(), Duration.ofSeconds(60));
    follower.process().destroyForcibly(); // SIGKILL: no goodbye on any socket
    int status = exit(leader, Duration.ofSeconds(30));
    assertThat(status).isEqualTo(1);
    assertThat(leader.stderr())
        .contains("error: step ")
        .contains("node 1 at 127.0.0.1:")
        .contains("disconnected")
        .doesNotContain("\tat ");
  }

  @Test
  void killingNodeZeroMidRunStopsNodeOne() throws Exception {
    int port = freePort();
    Node follower = launch("node1", nodeArgs(longRun(), 1, port));
    Node leader = launch("node0", nodeArgs(longRun(), 0, port));
    await(leader, s -> s.length() > "We the people".length(), Duration.ofSeconds(60));
    leader.process().destroyForcibly();
    int status = exit(follower, Duration.ofSeconds(30));
    assertThat(status).isEqualTo(1);
    assertThat(follower.stderr())
        .contains("error: node 0 at 127.0.0.1:" + port + " went away without shutting down")
        .doesNotContain("\tat ");
  }

  @Test
  void usageMistakesAreOneLineErrors() throws Exception {
    Path fixture = CliTest.repo().resolve("fixtures/golden/deepseek_v3_basic");
    String model = fixture.toString();
    int closed = freePort();
    record Case(int status, String message, String... args) {}
    for (Case c :
        List.of(
            new Case(
                2,
                "--tp-size 3 is not divisible by --nnodes 2",
                "generate",
                "--model",
                model,
                "x",
                "--tp-size",
                "3",
                "--nnodes",
                "2",
                "--dist-init-addr",
                "127.0.0.1:" + closed),
            new Case(
                2,
                "--dist-init-addr HOST:PORT is required with --nnodes > 1",
                "generate",
                "--model",
                model,
                "x",
                "--tp-size",
                "2",
                "--nnodes",
                "2"),
            new Case(
                2,
                "--node-rank must be in 0..1, got 2",
                "generate",
                "--model",
                model,
                "x",
                "--tp-size",
                "2",
                "--nnodes",
                "2",
                "--node-rank",
                "2",
                "--dist-init-addr",
                "127.0.0.1:" + closed),
            new Case(
                1,
                "could not reach node 0 at 127.0.0.1:" + closed + " within 1 s",
                "generate",
                "--model",
                model,
                "x",
                "--tp-size",
                "2",
                "--nnodes",
                "2",
                "--node-rank",
                "1",
                "--dist-init-addr",
                "127.0.0.1:" + closed,
                "--dist-timeout",
                "1"),
            new Case(
                1,
                "only 1 of 2 nodes arrived within 1 s; missing node ranks [1]",
                "generate",
                "--model",
                model,
                "x",
                "--tp-size",
                "2",
                "--nnodes",
                "2",
                "--node-rank",
                "0",
                "--dist-init-addr",
                "127.0.0.1:" + closed,
                "--dist-timeout",
                "1"))) {
      CliTest.Run r = CliTest.run(c.args());
      assertThat(r.status())
          .as(String.join(" ", c.args()) + " -> " + r.err())
          .isEqualTo(c.status());
      assertThat(r.err()).startsWith("error: ").contains(c.message()).doesNotContain("\tat ");
    }
  }
}
