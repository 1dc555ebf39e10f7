package dev.ringmaster.engine.constraint;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Retokenisation for jump-forward decoding. The text to split is the bytes of the token just
 * sampled (not yet run through the model, so it may still be replaced) followed by the bytes the
 * constraint forces after it, cut before a trailing incomplete UTF-8 character. The tokenizer
 * splits that text on its own (the pre-tokenizer sees no text before it), and the split is used
 * only when its tokens spell exactly those bytes and none of them ends the sequence; otherwise
 * there is no jump at this point. Tokens before the sampled one stay as they are, and what follows
 * the forced bytes is sampled as usual, so the split can differ from the tokenizer's split of the
 * whole output only across those two boundaries.
 */
final class JumpForward {
  private JumpForward() {}

  /**
   * The tokens spelling {@code sampled} followed by {@code forced}, or null when nothing is forced
   * or they do not split back into exactly those bytes.
   */
  static int[] retokenize(TokenVocabulary vocab, byte[] sampled, byte[] forced) {
    int cut = completeUtf8Length(forced);
    if (sampled == null || cut == 0) {
      return null;
    }
    byte[] text = Arrays.copyOf(sampled, sampled.length + cut);
    System.arraycopy(forced, 0, text, sampled.length, cut);
    String s;
    try {
      s =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(text))
              .toString();
    } catch (CharacterCodingException e) {
      return null; // the sampled token is part of a character: no text to split
    }
    int[] ids = vocab.encode(s);
    if (ids == null || ids.length == 0) {
      return null;
    }
    ByteArrayOutputStream spelled = new ByteArrayOutputStream(text.length);
    for (int id : ids) {
      byte[] b = vocab.bytes(id);
      if (b == null || b.length == 0 || vocab.isEos(id)) {
        return null;
      }
      spelled.writeBytes(b);
    }
    return Arrays.equals(spelled.toByteArray(), text) ? ids : null;
  }

  /** The length of {@code b} without a trailing incomplete UTF-8 sequence. */
  static int completeUtf8Length(byte[] b) {
    int n = b.length;
    int lead = n - 1;
    while (lead >= 0 && lead > n - 4 && (b[lead] & 0xC0) == 0x80) {
      lead--;
    }
    if (lead < 0) {
      return n;
    }
    int x = b[lead] & 0xff;
    int need = x < 0x80 ? 1 : x >= 0xF0 ? 4 : x >= 0xE0 ? 3 : x >= 0xC0 ? 2 : 1;
    return n - lead >= need ? n : lead;
  }

  /** A growable byte string for the forced bytes. */
  static final class Bytes {
    private byte[] data = new byte[16];
    private int size;

    void add(int b) {
      if (size == data.length) {
        data = Arrays.copyOf(data, size * 2);
      }
      data[size++] = (byte) b;
    }

    byte[] toArray() {
      return Arrays.copyOf(data, size);
    }
  }
}
