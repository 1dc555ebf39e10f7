package dev.ringmaster.model.tokenizer;

import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Translates the Oniguruma (Ruby syntax) regular expressions found in {@code tokenizer.json} into
 * {@link java.util.regex.Pattern}s with the same meaning on Unicode text.
 *
 * <p>Most syntax is shared (possessive quantifiers, atomic groups, lookaround, {@code \p{L}}). The
 * differences handled here: in Oniguruma {@code \s \d \w} are Unicode-aware while Java's are ASCII,
 * {@code \h} is a hex digit (Java: horizontal space), {@code \p{Han}}-style script names need
 * Java's {@code Is} prefix, {@code \p{^X}} is a negation, POSIX brackets are Unicode-aware, and
 * {@code ^ $} are always line anchors with {@code \n} as the only line terminator.
 */
final class OnigurumaRegex {
  private OnigurumaRegex() {}

  /** Unicode general categories (one or two letters) that Java accepts without a prefix. */
  private static final Set<String> GENERAL_CATEGORIES =
      Set.of(
          "L", "LU", "LL", "LT", "LM", "LO", "LC", "M", "MN", "MC", "ME", "N", "ND", "NL", "NO",
          "P", "PC", "PD", "PS", "PE", "PI", "PF", "PO", "S", "SM", "SC", "SK", "SO", "Z", "ZS",
          "ZL", "ZP", "C", "CC", "CF", "CO", "CS", "CN");

  private static final String SPACE = "\\p{IsWhite_Space}";
  private static final String NOT_SPACE = "\\P{IsWhite_Space}";
  private static final String DIGIT = "\\p{Nd}";
  private static final String NOT_DIGIT = "\\P{Nd}";
  private static final String WORD = "[\\p{L}\\p{M}\\p{Nd}\\p{Pc}]";
  private static final String NOT_WORD = "[^\\p{L}\\p{M}\\p{Nd}\\p{Pc}]";
  private static final String HEX = "[0-9a-fA-F]";
  private static final String NOT_HEX = "[^0-9a-fA-F]";

  /**
   * Compiles an Oniguruma pattern.
   *
   * @throws IllegalArgumentException naming the construct when the pattern uses syntax that has no
   *     Java equivalent here
   */
  static Pattern compile(String onigPattern) {
    String java = translate(onigPattern);
    try {
      return Pattern.compile(java, Pattern.MULTILINE | Pattern.UNIX_LINES | Pattern.UNICODE_CASE);
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException(
          "regex " + quote(onigPattern) + " is not valid after translation: " + e.getDescription(),
          e);
    }
  }

  /** Returns the Java spelling of an Oniguruma pattern. */
  static String translate(String p) {
    StringBuilder out = new StringBuilder(p.length() + 16);
    int classDepth = 0;
    int i = 0;
    while (i < p.length()) {
      char c = p.charAt(i);
      if (c == '\\') {
        if (i + 1 >= p.length()) {
          throw unsupported(p, "trailing backslash");
        }
        i = translateEscape(p, i, classDepth > 0, out);
        continue;
      }
      if (c == '[') {
        if (classDepth > 0 && p.startsWith("[:", i)) {
          int end = p.indexOf(":]", i + 2);
          if (end < 0) {
            throw unsupported(p, "unterminated POSIX bracket");
          }
          out.append(posixClass(p, p.substring(i + 2, end)));
          i = end + 2;
          continue;
        }
        classDepth++;
        out.append(c);
        i++;
        // A ']' right after '[' or '[^' is a literal in both dialects; keep it escaped for Java.
        if (i < p.length() && p.charAt(i) == '^') {
          out.append('^');
          i++;
        }
        if (i < p.length() && p.charAt(i) == ']') {
          out.append("\\]");
          i++;
        }
        continue;
      }
      if (c == ']' && classDepth > 0) {
        classDepth--;
      } else if (c == '(' && classDepth == 0 && p.startsWith("(?~", i)) {
        throw unsupported(p, "absent operator (?~...)");
      }
      out.append(c);
      i++;
    }
    return out.toString();
  }

  private static int translateEscape(String p, int i, boolean inClass, StringBuilder out) {
    char e = p.charAt(i + 1);
    switch (e) {
      case 's' -> out.append(SPACE);
      case 'S' -> out.append(NOT_SPACE);
      case 'd' -> out.append(DIGIT);
      case 'D' -> out.append(NOT_DIGIT);
      case 'w' -> out.append(WORD);
      case 'W' -> out.append(NOT_WORD);
      case 'h' -> out.append(HEX);
      case 'H' -> out.append(NOT_HEX);
      case 'K' -> throw unsupported(p, "\\K (keep)");
      case 'g' -> throw unsupported(p, "\\g subexpression call");
      case 'p', 'P' -> {
        if (i + 2 >= p.length() || p.charAt(i + 2) != '{') {
          throw unsupported(p, "\\" + e + " without {name}");
        }
        int end = p.indexOf('}', i + 3);
        if (end < 0) {
          throw unsupported(p, "unterminated \\" + e + "{");
        }
        String name = p.substring(i + 3, end);
        boolean negate = e == 'P';
        if (name.startsWith("^")) {
          negate = !negate;
          name = name.substring(1);
        }
        out.append(negate ? "\\P{" : "\\p{").append(propertyName(name)).append('}');
        return end + 1;
      }
      default -> out.append('\\').append(e);
    }
    return i + 2;
  }

  private static String propertyName(String name) {
    String compact = name.replace("_", "").replace(" ", "").toUpperCase(Locale.ROOT);
    if (GENERAL_CATEGORIES.contains(compact)) {
      if (compact.length() == 1 || compact.equals("LC")) {
        return compact;
      }
      return compact.charAt(0) + compact.substring(1).toLowerCase(Locale.ROOT);
    }
    // Scripts (Han, Hiragana, Latin...) and binary properties (Alphabetic, White_Space...).
    return "Is" + name;
  }

  private static String posixClass(String p, String name) {
    boolean negate = name.startsWith("^");
    String base = negate ? name.substring(1) : name;
    String set =
        switch (base) {
          case "alpha" -> "\\p{IsAlphabetic}";
          case "digit" -> "\\p{Nd}";
          case "alnum" -> "\\p{IsAlphabetic}\\p{Nd}";
          case "upper" -> "\\p{IsUppercase}";
          case "lower" -> "\\p{IsLowercase}";
          case "space" -> SPACE;
          case "punct" -> "\\p{P}";
          case "cntrl" -> "\\p{Cc}";
          case "xdigit" -> "0-9a-fA-F";
          case "word" -> "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
          default -> throw unsupported(p, "POSIX bracket [:" + name + ":]");
        };
    return negate ? "[^" + set + "]" : "[" + set + "]";
  }

  private static IllegalArgumentException unsupported(String pattern, String what) {
    return new IllegalArgumentException(
        "regex " + quote(pattern) + " uses " + what + ", which is not supported");
  }

  private static String quote(String s) {
    return "'" + s + "'";
  }
}
