package dev.ringmaster.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * EBNF-constrained outputs over HTTP on the embedded model: SGLang's {@code ebnf} (native and
 * OpenAI) and vLLM's {@code guided_grammar}, greedy and sampled; every output that stops parses as
 * an arithmetic expression with nested parentheses (a language no regex describes), and one cut by
 * its token budget is a prefix of one.
 */
class GrammarHttpTest {
  private static final String ARITHMETIC =
      """
      root ::= expr
      expr ::= term (("+" | "-" | "*") term){0,3}
      term ::= [0-9]{1,3} | "(" expr ")"
      """;
  private static TestServer s;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    s = TestServer.embedded();
    client = s.openAi();
  }

  @AfterAll
  static void stop() {
    client.close();
    s.close();
  }

  /** A recursive-descent parser of the grammar above, independent of the server's recogniser. */
  private static final class Arithmetic {
    private final String text;
    private int pos;
    private boolean ranOut;

    private Arithmetic(String text) {
      this.text = text;
    }

    /** "whole", "prefix" (cut short of a sentence) or "invalid". */
    static String classify(String text) {
      Arithmetic a = new Arithmetic(text);
      boolean ok = a.expr();
      if (ok && a.pos == text.length()) {
        return "whole";
      }
      return a.ranOut ? "prefix" : "invalid";
    }

    private boolean expr() {
      if (!term()) {
        return false;
      }
      for (int k = 0; k < 3 && pos < text.length() && "+-*".indexOf(text.charAt(pos)) >= 0; k++) {
        pos++;
        if (!term()) {
          return false;
        }
      }
      return true;
    }

    private boolean term() {
      if (pos == text.length()) {
        ranOut = true;
        return false;
      }
      if (text.charAt(pos) == '(') {
        pos++;
        if (!expr()) {
          return false;
        }
        if (pos == text.length()) {
          ranOut = true;
          return false;
        }
        return text.charAt(pos++) == ')';
      }
      int start = pos;
      while (pos < text.length() && Character.isDigit(text.charAt(pos)) && pos - start < 3) {
        pos++;
      }
      return pos > start;
    }
  }

  private static void assertInLanguage(String text, String finishReason) {
    String kind = Arithmetic.classify(text);
    if ("stop".equals(finishReason)) {
      assertThat(kind).as(text).isEqualTo("whole");
    } else {
      // Cut by the budget: a sentence that could go on, or a prefix of one.
      assertThat(kind).as(text).isIn("whole", "prefix");
    }
  }

  @Test
  void oracleTellsSentencesFromOthers() {
    assertThat(Arithmetic.classify("1+(23*(4-5))")).isEqualTo("whole");
    assertThat(Arithmetic.classify("1+(23*(4")).isEqualTo("prefix");
    assertThat(Arithmetic.classify("1+)")).isEqualTo("invalid");
    assertThat(Arithmetic.classify("1234")).isEqualTo("invalid");
  }

  @Test
  void nativeEbnfOutputsParse() {
    String grammar = TestServer.JSON.valueToTree(ARITHMETIC).toString();
    int stopped = 0;
    for (int seed = 1; seed <= 4; seed++) {
      double temperature = seed % 2 == 0 ? 0 : 1;
      HttpResponse<String> r =
          s.post(
              "/generate",
              "{\"text\": \"Compute: \", \"sampling_params\": {\"max_new_tokens\": 96, \"seed\": "
                  + seed
                  + ", \"temperature\": "
                  + temperature
                  + ", \"ebnf\": "
                  + grammar
                  + "}}");
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      JsonNode out = TestServer.json(r.body());
      String reason = out.at("/meta_info/finish_reason/type").asText();
      assertInLanguage(out.get("text").asText(), reason);
      stopped += "stop".equals(reason) ? 1 : 0;
    }
    assertThat(stopped).isPositive();
  }

  @Test
  void openAiEbnfAndGuidedGrammarWithTheJavaSdk() {
    for (String field : new String[] {"ebnf", "guided_grammar"}) {
      for (long seed = 1; seed <= 2; seed++) {
        ChatCompletion chat =
            client
                .chat()
                .completions()
                .create(
                    ChatCompletionCreateParams.builder()
                        .model(TestServer.MODEL)
                        .addUserMessage("Write an arithmetic expression.")
                        .maxCompletionTokens(48)
                        .temperature(seed == 1 ? 0.0 : 1.0)
                        .putAdditionalBodyProperty("seed", JsonValue.from(seed))
                        .putAdditionalBodyProperty(field, JsonValue.from(ARITHMETIC))
                        .build());
        ChatCompletion.Choice c = chat.choices().getFirst();
        assertInLanguage(
            c.message().content().orElseThrow(),
            c.finishReason() == ChatCompletion.Choice.FinishReason.STOP ? "stop" : "length");
      }
    }
  }
}
