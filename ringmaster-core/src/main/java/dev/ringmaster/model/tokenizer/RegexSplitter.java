package dev.ringmaster.model.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The {@code Split} pre-tokenizer: cuts a piece at the matches of a pattern. */
record RegexSplitter(Pattern pattern, SplitBehavior behavior, boolean invert)
    implements PreTokenizer {

  @Override
  public List<String> split(String piece) {
    // Alternating spans of (non-)matching text; each entry: start, end, matched.
    List<int[]> spans = new ArrayList<>();
    Matcher m = pattern.matcher(piece);
    int prev = 0;
    while (m.find()) {
      if (m.start() == m.end()) {
        continue;
      }
      if (m.start() > prev) {
        spans.add(new int[] {prev, m.start(), invert ? 1 : 0});
      }
      spans.add(new int[] {m.start(), m.end(), invert ? 0 : 1});
      prev = m.end();
    }
    if (prev < piece.length()) {
      spans.add(new int[] {prev, piece.length(), invert ? 1 : 0});
    }
    return assemble(piece, spans);
  }

  private List<String> assemble(String piece, List<int[]> spans) {
    List<int[]> kept = new ArrayList<>(spans.size());
    switch (behavior) {
      case ISOLATED -> kept.addAll(spans);
      case REMOVED -> spans.stream().filter(s -> s[2] == 0).forEach(kept::add);
      case MERGED_WITH_PREVIOUS -> {
        // A match joins the piece before it unless that piece is itself a match.
        boolean previousMatch = false;
        for (int[] s : spans) {
          if (s[2] == 1 && !previousMatch && !kept.isEmpty()) {
            kept.getLast()[1] = s[1];
          } else {
            kept.add(s.clone());
          }
          previousMatch = s[2] == 1;
        }
      }
      case MERGED_WITH_NEXT -> {
        // The mirror image: walk backwards, a match joins the piece after it.
        boolean nextMatch = false;
        for (int i = spans.size() - 1; i >= 0; i--) {
          int[] s = spans.get(i);
          if (s[2] == 1 && !nextMatch && !kept.isEmpty()) {
            kept.getFirst()[0] = s[0];
          } else {
            kept.addFirst(s.clone());
          }
          nextMatch = s[2] == 1;
        }
      }
      case CONTIGUOUS -> {
        boolean previousMatch = false;
        for (int[] s : spans) {
          if (s[2] == 1 == previousMatch && !kept.isEmpty()) {
            kept.getLast()[1] = s[1];
          } else {
            kept.add(s.clone());
          }
          previousMatch = s[2] == 1;
        }
      }
    }
    List<String> out = new ArrayList<>(kept.size());
    for (int[] s : kept) {
      out.add(piece.substring(s[0], s[1]));
    }
    return out;
  }
}
