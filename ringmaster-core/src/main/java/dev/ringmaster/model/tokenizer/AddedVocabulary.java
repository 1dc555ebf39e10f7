package dev.ringmaster.model.tokenizer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds added tokens in text. As in Hugging Face, tokens with {@code normalized=false} are found in
 * the raw text first; the rest of the text is then normalized and searched for the tokens with
 * {@code normalized=true}. Matching is leftmost-longest and non-overlapping.
 */
final class AddedVocabulary {
  /** A piece of input: either an added token's id or text still to be tokenized. */
  record Segment(int tokenId, String text) {
    boolean isToken() {
      return text == null;
    }
  }

  private final Trie raw = new Trie();
  private final Trie normalized = new Trie();
  private final Normalizer normalizer;

  AddedVocabulary(List<AddedToken> tokens, Normalizer normalizer) {
    this.normalizer = normalizer;
    for (AddedToken t : tokens) {
      if (t.normalized()) {
        normalized.add(normalizer.normalize(t.content()), t);
      } else {
        raw.add(t.content(), t);
      }
    }
  }

  /** Splits text into added tokens and normalized text segments. */
  List<Segment> split(String text) {
    List<Segment> out = new ArrayList<>();
    for (Segment s : find(text, raw)) {
      if (s.isToken()) {
        out.add(s);
      } else {
        out.addAll(find(normalizer.normalize(s.text()), normalized));
      }
    }
    return out;
  }

  private static List<Segment> find(String text, Trie trie) {
    List<Segment> out = new ArrayList<>();
    if (trie.isEmpty()) {
      if (!text.isEmpty()) {
        out.add(new Segment(-1, text));
      }
      return out;
    }
    int textStart = 0; // start of the text not yet emitted
    int i = 0;
    while (i < text.length()) {
      Trie.Match m = trie.longestAt(text, i);
      if (m == null) {
        i++;
        continue;
      }
      int start = i;
      int stop = i + m.length();
      AddedToken t = m.token();
      if (t.singleWord() && (isWordBefore(text, start) || isWordAfter(text, stop))) {
        i = stop;
        continue;
      }
      if (t.lstrip()) {
        while (start > textStart && UnicodeSpace.is(text.codePointBefore(start))) {
          start -= Character.charCount(text.codePointBefore(start));
        }
      }
      if (t.rstrip()) {
        while (stop < text.length() && UnicodeSpace.is(text.codePointAt(stop))) {
          stop += Character.charCount(text.codePointAt(stop));
        }
      }
      if (start > textStart) {
        out.add(new Segment(-1, text.substring(textStart, start)));
      }
      out.add(new Segment(t.id(), null));
      textStart = stop;
      i = stop;
    }
    if (textStart < text.length()) {
      out.add(new Segment(-1, text.substring(textStart)));
    }
    return out;
  }

  private static boolean isWordBefore(String text, int index) {
    return index > 0 && isWordChar(text.codePointBefore(index));
  }

  private static boolean isWordAfter(String text, int index) {
    return index < text.length() && isWordChar(text.codePointAt(index));
  }

  private static boolean isWordChar(int cp) {
    if (cp == '_' || Character.isAlphabetic(cp)) {
      return true;
    }
    int type = Character.getType(cp);
    return type == Character.DECIMAL_DIGIT_NUMBER
        || type == Character.LETTER_NUMBER
        || type == Character.OTHER_NUMBER;
  }

  /** A character trie over token contents. */
  private static final class Trie {
    record Match(AddedToken token, int length) {}

    private final Map<Character, Trie> children = new HashMap<>();
    private AddedToken token;

    void add(String content, AddedToken t) {
      if (content.isEmpty()) {
        return;
      }
      Trie node = this;
      for (int i = 0; i < content.length(); i++) {
        node = node.children.computeIfAbsent(content.charAt(i), c -> new Trie());
      }
      if (node.token == null) {
        node.token = t;
      }
    }

    boolean isEmpty() {
      return children.isEmpty();
    }

    Match longestAt(String text, int start) {
      Match best = null;
      Trie node = this;
      for (int i = start; i < text.length(); i++) {
        node = node.children.get(text.charAt(i));
        if (node == null) {
          break;
        }
        if (node.token != null) {
          best = new Match(node.token, i + 1 - start);
        }
      }
      return best;
    }
  }
}
