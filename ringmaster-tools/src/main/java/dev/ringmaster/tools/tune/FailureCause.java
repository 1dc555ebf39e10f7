package dev.ringmaster.tools.tune;

import java.util.List;
import java.util.Locale;

/** Names why a server process failed from its exit status and its log. */
final class FailureCause {
  /** Exit status of {@code ringmaster} for a refused flag or bad input. */
  static final int USAGE_EXIT = 2;

  private FailureCause() {}

  /** {@code out of memory}, {@code assertion}, {@code refused flags} or {@code crashed}. */
  static String classify(int exitCode, List<String> log) {
    for (String l : log) {
      String s = l.toLowerCase(Locale.ROOT);
      if (s.contains("outofmemoryerror")
          || s.contains("cuda_error_out_of_memory")
          || s.contains("out of memory")) {
        return "out of memory";
      }
    }
    if (log.stream().anyMatch(l -> l.contains("AssertionError"))) {
      return "assertion";
    }
    return exitCode == USAGE_EXIT ? "refused flags" : "crashed";
  }

  /**
   * The line that says most: the last {@code error:} line, else the last exception or error line,
   * else the last line; "" for an empty log.
   */
  static String lastError(List<String> log) {
    for (int i = log.size() - 1; i >= 0; i--) {
      if (log.get(i).startsWith("error:")) {
        return log.get(i);
      }
    }
    for (int i = log.size() - 1; i >= 0; i--) {
      String l = log.get(i);
      if (!l.startsWith("\tat ") && (l.contains("Exception") || l.contains("Error"))) {
        return l.strip();
      }
    }
    for (int i = log.size() - 1; i >= 0; i--) {
      if (!log.get(i).isBlank()) {
        return log.get(i).strip();
      }
    }
    return "";
  }
}
