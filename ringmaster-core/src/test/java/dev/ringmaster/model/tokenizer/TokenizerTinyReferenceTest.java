package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.testing.ReferenceJson;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Small hand-made tokenizers (written by scripts/make_tokenizer_reference.py) that exercise what
 * DeepSeek-V3 does not: merges as "a b" strings and as pairs, NFKC, added tokens with lstrip,
 * rstrip and single_word, a BOS/EOS template, byte_fallback with unk, and a Replace / ByteFallback
 * / Fuse / Strip decoder chain. Expected ids and texts come from Hugging Face {@code tokenizers}.
 */
class TokenizerTinyReferenceTest {
  @TestFactory
  Stream<DynamicTest> agreesWithHuggingFace() throws IOException {
    JsonNode reference = ReferenceJson.read(TestData.fixture("tiny_reference.json.gz"));
    List<DynamicTest> tests = new ArrayList<>();
    Iterator<Map.Entry<String, JsonNode>> files = reference.properties().iterator();
    while (files.hasNext()) {
      Map.Entry<String, JsonNode> file = files.next();
      Tokenizer tok = Tokenizer.load(TestData.fixture(file.getKey()));
      for (JsonNode c : file.getValue()) {
        String text = c.get("text").asText();
        tests.add(
            DynamicTest.dynamicTest(
                file.getKey() + " '" + text.replace("\n", "\\n") + "'",
                () -> {
                  assertThat(tok.encode(text, false))
                      .containsExactly(ints(c.get("ids_without_special")));
                  int[] with = ints(c.get("ids_with_special"));
                  assertThat(tok.encode(text)).containsExactly(with);
                  assertThat(tok.decode(with)).isEqualTo(c.get("decoded_with_special").asText());
                  assertThat(tok.decode(with, true))
                      .isEqualTo(c.get("decoded_skip_special").asText());
                  assertThat(TokenizerDeepSeekV3ReferenceTest.streamed(tok, with))
                      .isEqualTo(tok.decode(with));
                }));
      }
    }
    return tests.stream();
  }

  @Test
  void bothMergeFormsGiveTheSameTokenizer() {
    Tokenizer strings = Tokenizer.load(TestData.fixture("tiny_bytelevel_string_merges.json"));
    Tokenizer pairs = Tokenizer.load(TestData.fixture("tiny_bytelevel_pair_merges.json"));
    for (String text : List.of("hello world", "hellohello 123 é", "ｈｅｌｌｏ")) {
      assertThat(strings.encode(text)).containsExactly(pairs.encode(text));
    }
  }

  @Test
  void byteFallbackSpellsUnknownCharactersAsBytes() {
    Tokenizer tok = Tokenizer.load(TestData.fixture("tiny_byte_fallback.json"));
    int[] ids = tok.encode("日", false);
    // "▁" then the three UTF-8 bytes of 日 (E6 97 A5) as <0xXX> tokens.
    assertThat(ids).hasSize(4);
    assertThat(tok.idToToken(ids[1])).isEqualTo("<0xE6>");
    assertThat(tok.idToToken(ids[2])).isEqualTo("<0x97>");
    assertThat(tok.idToToken(ids[3])).isEqualTo("<0xA5>");
    assertThat(tok.decode(ids)).isEqualTo("日");
  }

  @Test
  void streamDecoderWaitsForTheLastByteOfACharacter() {
    Tokenizer tok = Tokenizer.load(TestData.fixture("tiny_byte_fallback.json"));
    int[] ids = tok.encode("h日", false);
    StreamDecoder stream = tok.newStreamDecoder();
    List<String> pieces = new ArrayList<>();
    for (int id : ids) {
      pieces.add(stream.next(id));
    }
    assertThat(pieces).containsExactly("h", "", "", "日");
    assertThat(stream.flush()).isEmpty();
  }

  static int[] ints(JsonNode array) {
    int[] out = new int[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = array.get(i).asInt();
    }
    return out;
  }
}
