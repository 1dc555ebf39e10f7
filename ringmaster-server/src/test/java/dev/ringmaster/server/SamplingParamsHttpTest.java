package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.ringmaster.runtime.KvCache;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The sampling parameters over HTTP: each changes the output as it should, logprobs come in
 * OpenAI's shape with the CPU model's log-softmax values, and seeds reproduce.
 */
class SamplingParamsHttpTest {
  private static final String PROMPT = "[5, 6, 7, 8, 9]";
  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.start();
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  /** Output ids of {@code /generate} on the fixed prompt with extra sampling fields. */
  private static int[] nativeIds(int maxNew, String extra) {
    HttpResponse<String> r =
        s.post(
            "/generate",
            "{\"input_ids\": "
                + PROMPT
                + ", \"sampling_params\": {\"max_new_tokens\": "
                + maxNew
                + ", \"ignore_eos\": true"
                + extra
                + "}}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode ids = TestServer.json(r.body()).get("output_ids");
    int[] out = new int[ids.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ids.get(i).asInt();
    }
    return out;
  }

  /** The text of a completion of the fixed prompt with extra body fields. */
  private static String completionText(int maxTokens, String extra) {
    return text(
        s.post(
            "/v1/completions",
            "{\"prompt\": "
                + PROMPT
                + ", \"max_tokens\": "
                + maxTokens
                + ", \"ignore_eos\": true"
                + extra
                + "}"));
  }

  private static String decode(int[] ids) {
    return s.server.context().model().tokenizer().decode(ids, true);
  }

  private static String tokenText(int id) {
    return s.server.context().model().tokenizer().decode(new int[] {id}, false);
  }

  private static final org.assertj.core.data.Offset<Double> CLOSE =
      org.assertj.core.data.Offset.offset(1e-4);

  /** The {@code k} largest values, largest first. */
  private static double[] topValues(double[] v, int k) {
    double[] sorted = v.clone();
    Arrays.sort(sorted);
    double[] out = new double[k];
    for (int i = 0; i < k; i++) {
      out[i] = sorted[sorted.length - 1 - i];
    }
    return out;
  }

  private static int maxRepeats(int[] ids) {
    Map<Integer, Integer> c = new HashMap<>();
    int max = 0;
    for (int id : ids) {
      max = Math.max(max, c.merge(id, 1, Integer::sum));
    }
    return max;
  }

  private static String text(HttpResponse<String> r) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return TestServer.json(r.body()).get("choices").get(0).get("text").asText();
  }

  @Test
  void penaltiesSuppressRepeats() {
    int[] plain = nativeIds(40, ", \"temperature\": 0");
    assertThat(maxRepeats(plain)).as("greedy output repeats").isGreaterThan(3);
    for (String p :
        new String[] {
          "\"frequency_penalty\": 2", "\"presence_penalty\": 2", "\"repetition_penalty\": 2"
        }) {
      int[] penalized = nativeIds(40, ", \"temperature\": 0, " + p);
      assertThat(maxRepeats(penalized)).as(p).isLessThan(maxRepeats(plain));
      // The OpenAI endpoint maps the parameter the same way.
      assertThat(completionText(40, ", \"temperature\": 0, " + p))
          .as(p)
          .isEqualTo(decode(penalized));
    }
  }

  @Test
  void aLargeNegativeBiasBansAToken() {
    int[] plain = nativeIds(20, ", \"temperature\": 0");
    int banned = plain[0];
    String bias = ", \"temperature\": 0, \"logit_bias\": {\"" + banned + "\": -100}";
    int[] biased = nativeIds(20, bias);
    assertThat(biased).doesNotContain(banned);
    assertThat(completionText(20, bias)).isEqualTo(decode(biased));
    // A large positive bias makes a token the greedy choice.
    String force = ", \"temperature\": 0, \"logit_bias\": {\"17\": 100}";
    assertThat(nativeIds(5, force)).containsOnly(17);
    assertThat(completionText(5, force)).isEqualTo(decode(new int[] {17, 17, 17, 17, 17}));
  }

  @Test
  void minPOfOneKeepsOnlyTheMostLikelyToken() {
    int[] greedy = nativeIds(12, ", \"temperature\": 0");
    String minP = ", \"temperature\": 1.5, \"seed\": 3, \"min_p\": 1.0";
    assertThat(nativeIds(12, minP)).containsExactly(greedy);
    assertThat(completionText(12, minP)).isEqualTo(decode(greedy));
  }

  @Test
  void seedsReproduceAndDifferentSeedsDiffer() {
    String body = "{\"prompt\": " + PROMPT + ", \"max_tokens\": 16, \"temperature\": 1.2";
    String a = text(s.post("/v1/completions", body + ", \"seed\": 41}"));
    String b = text(s.post("/v1/completions", body + ", \"seed\": 41}"));
    assertThat(b).isEqualTo(a);
    boolean differs = false;
    for (int seed = 42; seed < 46 && !differs; seed++) {
      differs = !text(s.post("/v1/completions", body + ", \"seed\": " + seed + "}")).equals(a);
    }
    assertThat(differs).isTrue();
    int[] n1 = nativeIds(16, ", \"temperature\": 1.2, \"seed\": 41");
    assertThat(nativeIds(16, ", \"temperature\": 1.2, \"seed\": 41")).containsExactly(n1);
  }

  /** The CPU model's log-softmax of the next token after {@code prompt}. */
  private static double[] logSoftmax(int[] prompt) {
    KvCache cache = s.lm.newCache();
    float[] logits = s.lm.forwardAll(prompt, cache);
    int vocab = s.lm.config().vocabSize();
    int off = (prompt.length - 1) * vocab;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < vocab; i++) {
      max = Math.max(max, logits[off + i]);
    }
    double sum = 0;
    for (int i = 0; i < vocab; i++) {
      sum += Math.exp(logits[off + i] - max);
    }
    double[] out = new double[vocab];
    for (int i = 0; i < vocab; i++) {
      out[i] = logits[off + i] - max - Math.log(sum);
    }
    return out;
  }

  @Test
  void completionLogprobsEqualTheCpuLogSoftmax() {
    HttpResponse<String> r =
        s.post(
            "/v1/completions",
            "{\"prompt\": " + PROMPT + ", \"max_tokens\": 1, \"temperature\": 0, \"logprobs\": 3}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    JsonNode lp = TestServer.json(r.body()).get("choices").get(0).get("logprobs");
    assertThat(lp.get("tokens")).hasSize(1);
    assertThat(lp.get("text_offset").get(0).asInt()).isZero();
    double[] ref = logSoftmax(new int[] {5, 6, 7, 8, 9});
    int chosen = nativeIds(1, ", \"temperature\": 0")[0];
    assertThat(lp.get("tokens").get(0).asText()).isEqualTo(tokenText(chosen));
    assertThat(lp.get("token_logprobs").get(0).asDouble()).isCloseTo(ref[chosen], CLOSE);
    assertThat(ref[chosen]).isEqualTo(topValues(ref, 1)[0]);
    // Keys are token texts (two ids may share one); values are the largest log-probabilities.
    JsonNode top = lp.get("top_logprobs").get(0);
    double[] best = topValues(ref, 3);
    assertThat(top.size()).isBetween(1, 3);
    int i = 0;
    for (Map.Entry<String, JsonNode> e : top.properties()) {
      assertThat(e.getValue().asDouble()).isCloseTo(best[i++], CLOSE);
    }
  }

  @Test
  void aConstraintAllowingFewTokensListsOnlyThoseAsAlternatives() {
    // "ab": the first token may only be a prefix of it, far fewer than the five asked for; a
    // forbidden token has no probability and is left out (JSON has no -Infinity).
    HttpResponse<String> r =
        s.post(
            "/v1/completions",
            "{\"prompt\": "
                + PROMPT
                + ", \"max_tokens\": 2, \"temperature\": 0, \"logprobs\": 5, \"regex\": \"ab\"}");
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.body()).doesNotContain("Infinity");
    JsonNode lp = TestServer.json(r.body()).get("choices").get(0).get("logprobs");
    for (JsonNode top : lp.get("top_logprobs")) {
      assertThat(top.size()).isBetween(1, 4);
      for (Map.Entry<String, JsonNode> e : top.properties()) {
        assertThat(e.getValue().isNumber()).as(e.toString()).isTrue();
        assertThat(e.getKey()).as("a prefix of the rest of \"ab\"").isIn("a", "b", "ab");
      }
    }
  }

  @Test
  void chatLogprobsComeInOpenAisShapeWithTheCpuValues() {
    ChatCompletion chat =
        client
            .chat()
            .completions()
            .create(
                ChatCompletionCreateParams.builder()
                    .model(TestServer.MODEL)
                    .addUserMessage("hi")
                    .maxCompletionTokens(1)
                    .temperature(0.0)
                    .logprobs(true)
                    .topLogprobs(4)
                    .build());
    var content = chat.choices().getFirst().logprobs().orElseThrow().content().orElseThrow();
    assertThat(content).hasSize(1);
    var first = content.getFirst();
    assertThat(first.topLogprobs()).hasSize(4);
    assertThat(first.bytes()).isPresent();
    // The chat prompt as the server renders it: the template's text, encoded without extras.
    var tok = s.server.context().model().tokenizer();
    String rendered =
        tok.chatTemplate()
            .orElseThrow()
            .render(
                java.util.List.of(new dev.ringmaster.model.tokenizer.ChatMessage("user", "hi")),
                true);
    double[] ref = logSoftmax(tok.encode(rendered, false));
    double[] best = topValues(ref, 4);
    assertThat(first.logprob()).isCloseTo(best[0], CLOSE);
    for (int i = 0; i < 4; i++) {
      assertThat(first.topLogprobs().get(i).logprob()).isCloseTo(best[i], CLOSE);
    }
  }
}
