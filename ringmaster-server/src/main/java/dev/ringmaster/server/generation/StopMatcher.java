package dev.ringmaster.server.generation;

import java.util.List;

/**
 * Finds stop strings in streamed text. Text that could still turn out to be the start of a stop
 * string is held back, so a client never sees part of a stop string; on a match the text before it
 * is released and the rest is dropped.
 */
final class StopMatcher {
  private final List<String> stops;
  private final StringBuilder held = new StringBuilder();
  private String matched;

  StopMatcher(List<String> stops) {
    this.stops = stops;
  }

  /** The stop string that matched, or null. */
  String matched() {
    return matched;
  }

  /** Adds text; returns what may be shown now. After a match it returns "" forever. */
  String push(String text) {
    if (matched != null) {
      return "";
    }
    held.append(text);
    if (stops.isEmpty()) {
      return drain(held.length());
    }
    int first = -1;
    String which = null;
    for (String s : stops) {
      int i = held.indexOf(s);
      if (i >= 0 && (first < 0 || i < first)) {
        first = i;
        which = s;
      }
    }
    if (which != null) {
      matched = which;
      String out = held.substring(0, first);
      held.setLength(0);
      return out;
    }
    int keep = 0;
    for (String s : stops) {
      for (int k = Math.min(s.length() - 1, held.length()); k > keep; k--) {
        if (held.length() >= k && endsWith(held, s, k)) {
          keep = k;
          break;
        }
      }
    }
    return drain(held.length() - keep);
  }

  /** Releases whatever is held (the stream ended without a match). */
  String flush() {
    return matched != null ? "" : drain(held.length());
  }

  private String drain(int n) {
    String out = held.substring(0, n);
    held.delete(0, n);
    return out;
  }

  /** Whether {@code sb} ends with the first {@code k} characters of {@code s}. */
  private static boolean endsWith(StringBuilder sb, String s, int k) {
    int off = sb.length() - k;
    for (int i = 0; i < k; i++) {
      if (sb.charAt(off + i) != s.charAt(i)) {
        return false;
      }
    }
    return true;
  }
}
