package dev.ringmaster.model.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Streaming detokenization of DeepSeek-V3 byte tokens with characters split across tokens. */
class TokenizerStreamDecoderTest {
  /** One single-byte token per UTF-8 byte of the text: the worst case for streaming. */
  private static int[] byteTokens(Tokenizer tok, String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    int[] ids = new int[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      ids[i] = tok.tokenToId(String.valueOf(ByteLevel.charOf(bytes[i] & 0xFF))).orElseThrow();
    }
    return ids;
  }

  @Test
  void emitsEachCharacterWhenItsLastByteArrives() {
    Tokenizer tok = TestData.deepSeekV3();
    String text = "aé中😀👨‍👩‍👧z";
    int[] ids = byteTokens(tok, text);
    StreamDecoder stream = tok.newStreamDecoder();
    List<String> pieces = new ArrayList<>();
    StringBuilder joined = new StringBuilder();
    for (int id : ids) {
      String piece = stream.next(id);
      assertThat(piece).doesNotContain("\uFFFD");
      pieces.add(piece);
      joined.append(piece);
    }
    joined.append(stream.flush());
    assertThat(joined.toString()).isEqualTo(text).isEqualTo(tok.decode(ids));
    assertThat(pieces.subList(0, 7)).containsExactly("a", "", "é", "", "", "中", "");
  }

  @Test
  void flushEmitsAnIncompleteTailAsReplacement() {
    Tokenizer tok = TestData.deepSeekV3();
    int[] ids = byteTokens(tok, "x中");
    StreamDecoder stream = tok.newStreamDecoder();
    assertThat(stream.next(ids[0])).isEqualTo("x");
    assertThat(stream.next(ids[1])).isEmpty();
    assertThat(stream.flush()).isEqualTo(tok.decode(new int[] {ids[1]})).isEqualTo("\uFFFD");
  }

  @Test
  void skipsSpecialTokensWhenAsked() {
    Tokenizer tok = TestData.deepSeekV3();
    int[] ids = tok.encode("hi there");
    StreamDecoder stream = tok.newStreamDecoder(true);
    StringBuilder out = new StringBuilder();
    for (int id : ids) {
      out.append(stream.next(id));
    }
    out.append(stream.next(tok.eosIds()[0])).append(stream.flush());
    assertThat(out.toString()).isEqualTo("hi there");
  }
}
