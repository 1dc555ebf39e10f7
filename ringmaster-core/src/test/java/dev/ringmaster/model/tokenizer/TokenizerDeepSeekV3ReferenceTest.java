package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.testing.ReferenceJson;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Agreement with Hugging Face on the real DeepSeek-V3 tokenizer, id for id, using the reference
 * written by scripts/make_tokenizer_reference.py (curated texts plus 200 held-out random texts).
 */
class TokenizerDeepSeekV3ReferenceTest {
  private static JsonNode reference() throws IOException {
    return ReferenceJson.read(TestData.fixture("deepseek_v3_reference.json.gz"));
  }

  private static int[] ints(JsonNode array) {
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asInt();
    }
    return out;
  }

  @TestFactory
  Stream<DynamicTest> encodesAndDecodesLikeHuggingFace() throws IOException {
    Tokenizer tok = TestData.deepSeekV3();
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (JsonNode c : reference().get("cases")) {
      String text = c.get("text").asText();
      String name = c.get("kind").asText() + " #" + n++ + " " + abbreviate(text);
      tests.add(
          DynamicTest.dynamicTest(
              name,
              () -> {
                int[] without = ints(c.get("ids_without_special"));
                int[] with = ints(c.get("ids_with_special"));
                assertThat(tok.encode(text, false))
                    .as("ids without special tokens")
                    .containsExactly(without);
                assertThat(tok.encode(text)).as("ids with special tokens").containsExactly(with);
                assertThat(tok.decode(with)).isEqualTo(c.get("decoded_with_special").asText());
                assertThat(tok.decode(with, true))
                    .isEqualTo(c.get("decoded_skip_special").asText());
                assertThat(tok.decode(without)).as("round trip").isEqualTo(text);
              }));
    }
    return tests.stream();
  }

  @TestFactory
  Stream<DynamicTest> streamDecodingEqualsFullDecode() throws IOException {
    Tokenizer tok = TestData.deepSeekV3();
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (JsonNode c : reference().get("cases")) {
      int[] ids = ints(c.get("ids_with_special"));
      tests.add(
          DynamicTest.dynamicTest(
              "case #" + n++ + " " + abbreviate(c.get("text").asText()),
              () -> assertThat(streamed(tok, ids)).isEqualTo(tok.decode(ids))));
    }
    return tests.stream();
  }

  static String streamed(Tokenizer tok, int[] ids) {
    StreamDecoder stream = tok.newStreamDecoder();
    StringBuilder out = new StringBuilder();
    for (int id : ids) {
      out.append(stream.next(id));
    }
    return out.append(stream.flush()).toString();
  }

  @TestFactory
  Stream<DynamicTest> rendersChatTemplateLikeTransformers() throws IOException {
    Tokenizer tok = TestData.deepSeekV3();
    ChatTemplate template = tok.chatTemplate().orElseThrow();
    List<DynamicTest> tests = new ArrayList<>();
    int n = 0;
    for (JsonNode chat : reference().get("chat")) {
      List<ChatMessage> messages = new ArrayList<>();
      for (JsonNode m : chat.get("messages")) {
        messages.add(new ChatMessage(m.get("role").asText(), m.get("content").asText()));
      }
      boolean prompt = chat.get("add_generation_prompt").asBoolean();
      tests.add(
          DynamicTest.dynamicTest(
              "chat #" + n++,
              () -> {
                String rendered = template.render(messages, prompt);
                assertThat(rendered).isEqualTo(chat.get("rendered").asText());
                assertThat(tok.encode(rendered, false)).containsExactly(ints(chat.get("ids")));
              }));
    }
    return tests.stream();
  }

  @Test
  void specialTokenIdsAndSizes() throws IOException {
    Tokenizer tok = TestData.deepSeekV3();
    JsonNode ref = reference();
    assertThat(tok.vocabSize()).isEqualTo(ref.get("vocab_size").asInt());
    assertThat(tok.bosId()).hasValue(ref.get("bos_id").asInt());
    assertThat(tok.eosIds()).containsExactly(ref.get("eos_id").asInt());
    assertThat(tok.tokenToId("<｜User｜>")).hasValue(128803);
    assertThat(tok.idToToken(0)).isEqualTo("<｜begin▁of▁sentence｜>");
    assertThat(tok.isSpecial(0)).isTrue();
    assertThat(tok.isSpecial(128803)).isFalse();
  }

  private static String abbreviate(String s) {
    String oneLine = s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
    return oneLine.length() > 40 ? oneLine.substring(0, 40) + "…" : oneLine;
  }
}
