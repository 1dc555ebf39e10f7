package dev.ringmaster.model.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Decodes generated tokens one at a time, emitting text only once it is complete: a character whose
 * UTF-8 bytes are spread over several byte-level tokens appears when its last byte arrives. The
 * concatenation of everything {@link #next} and {@link #flush} return equals the full decode.
 *
 * <p>It re-decodes a short window: the ids of the last emitted chunk (as context) plus the ids not
 * yet emitted, and holds back while the result ends in U+FFFD (an incomplete character). Not
 * thread-safe: use one per generated sequence.
 */
public final class StreamDecoder {
  private final Function<int[], String> decode;
  private final List<Integer> window = new ArrayList<>();
  private String prefix = "";
  private int prefixIndex;

  StreamDecoder(Function<int[], String> decode) {
    this.decode = decode;
  }

  /**
   * Adds one token.
   *
   * @return the text completed by this token, or "" while a character is incomplete
   */
  public String next(int id) {
    window.add(id);
    String text = decode.apply(ids());
    if (text.length() <= prefix.length() || text.endsWith(String.valueOf(Utf8.REPLACEMENT))) {
      return "";
    }
    String emitted = text.substring(commonPrefixLength(prefix, text));
    int newPrefixIndex = window.size() - prefixIndex;
    window.subList(0, prefixIndex).clear();
    prefix = decode.apply(ids());
    prefixIndex = newPrefixIndex;
    return emitted;
  }

  /**
   * Ends the stream.
   *
   * @return text held back, with U+FFFD for bytes that never formed a character; "" if none
   */
  public String flush() {
    String text = decode.apply(ids());
    String rest = text.substring(commonPrefixLength(prefix, text));
    window.clear();
    prefix = "";
    prefixIndex = 0;
    return rest;
  }

  private int[] ids() {
    return window.stream().mapToInt(Integer::intValue).toArray();
  }

  private static int commonPrefixLength(String a, String b) {
    int n = Math.min(a.length(), b.length());
    int i = 0;
    while (i < n && a.charAt(i) == b.charAt(i)) {
      i++;
    }
    return i;
  }
}
