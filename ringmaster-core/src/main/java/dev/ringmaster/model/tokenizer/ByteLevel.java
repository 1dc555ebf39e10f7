package dev.ringmaster.model.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The GPT-2 byte-to-character alphabet used by byte-level BPE: every byte is shown as one printable
 * character, so that any UTF-8 text becomes a string over a 256-character alphabet.
 *
 * <p>Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls, space, DEL, NBSP,
 * soft hyphen...) are shifted to U+0100 and above in byte order.
 */
final class ByteLevel {
  private ByteLevel() {}

  /** The pre-tokenization pattern of GPT-2, used when {@code use_regex} is true. */
  static final Pattern GPT2_PATTERN =
      OnigurumaRegex.compile(
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

  private static final char[] BYTE_TO_CHAR = new char[256];
  private static final int[] CHAR_TO_BYTE = new int[512];

  static {
    java.util.Arrays.fill(CHAR_TO_BYTE, -1);
    int shifted = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      char c = printable ? (char) b : (char) (256 + shifted++);
      BYTE_TO_CHAR[b] = c;
      CHAR_TO_BYTE[c] = b;
    }
  }

  /** Maps text to the byte alphabet: one character per UTF-8 byte. */
  static String encode(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    char[] out = new char[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      out[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
    }
    return new String(out);
  }

  /** The character that stands for a byte. */
  static char charOf(int b) {
    return BYTE_TO_CHAR[b];
  }

  /** The byte a character of the alphabet stands for, or -1 for characters outside it. */
  static int byteOf(char c) {
    return c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
  }

  /**
   * Appends the bytes a token stands for. A token with any character outside the alphabet (an added
   * token such as {@code <｜User｜>}) contributes its own UTF-8 bytes, as in Hugging Face.
   */
  static void appendTokenBytes(String token, ByteArrayOutputStream out) {
    for (int i = 0; i < token.length(); i++) {
      if (byteOf(token.charAt(i)) < 0) {
        out.writeBytes(token.getBytes(StandardCharsets.UTF_8));
        return;
      }
    }
    for (int i = 0; i < token.length(); i++) {
      out.write(byteOf(token.charAt(i)));
    }
  }

  /** Decodes a token sequence to text; invalid UTF-8 becomes U+FFFD. */
  static String decode(List<String> tokens) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (String token : tokens) {
      appendTokenBytes(token, bytes);
    }
    return Utf8.decodeLossy(bytes.toByteArray());
  }
}
