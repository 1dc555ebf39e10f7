package dev.ringmaster.model.tokenizer;

/**
 * UTF-8 decoding that replaces each maximal invalid subsequence with one U+FFFD, the Unicode
 * recommended practice that Rust's {@code String::from_utf8_lossy} (and so Hugging Face) follows.
 */
final class Utf8 {
  private Utf8() {}

  /** The replacement character emitted for invalid or incomplete sequences. */
  static final char REPLACEMENT = '\uFFFD';

  static String decodeLossy(byte[] bytes) {
    StringBuilder out = new StringBuilder(bytes.length);
    int i = 0;
    while (i < bytes.length) {
      int b0 = bytes[i] & 0xFF;
      if (b0 < 0x80) {
        out.append((char) b0);
        i++;
        continue;
      }
      int length;
      int lo = 0x80;
      int hi = 0xBF;
      if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2;
      } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3;
        if (b0 == 0xE0) {
          lo = 0xA0;
        } else if (b0 == 0xED) {
          hi = 0x9F;
        }
      } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4;
        if (b0 == 0xF0) {
          lo = 0x90;
        } else if (b0 == 0xF4) {
          hi = 0x8F;
        }
      } else {
        out.append(REPLACEMENT);
        i++;
        continue;
      }
      int codePoint = b0 & (0xFF >> (length + 1));
      int k = 1;
      for (; k < length && i + k < bytes.length; k++) {
        int b = bytes[i + k] & 0xFF;
        int min = k == 1 ? lo : 0x80;
        int max = k == 1 ? hi : 0xBF;
        if (b < min || b > max) {
          break;
        }
        codePoint = (codePoint << 6) | (b & 0x3F);
      }
      if (k == length) {
        out.appendCodePoint(codePoint);
      } else {
        out.append(REPLACEMENT);
      }
      i += k;
    }
    return out.toString();
  }
}
