package dev.ringmaster.server.openai;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.server.api.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Reads tool calls out of a reply's text, also while the text is still arriving. A reply is calls
 * when, spaces aside, it is one of:
 *
 * <ul>
 *   <li>call objects {@code {"name": <tool>, "arguments": {...}}} (either key first), one after
 *       another, each bare or inside Qwen's and Hermes' {@code <tool_call>} ... {@code
 *       </tool_call>} tags;
 *   <li>a JSON array of call objects;
 *   <li>with {@code deepSeek}, DeepSeek-V3's tool-call tokens: {@code <｜tool▁calls▁begin｜>}, then
 *       per call {@code <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME}, the arguments object (usually
 *       in a {@code ```json} fence) and {@code <｜tool▁call▁end｜>}, then {@code <｜tool▁calls▁end｜>}.
 * </ul>
 *
 * Text may come first: a reply that does not start with calls is content up to the first {@code
 * <tool_call>} tag (or, with {@code deepSeek}, {@code <｜tool▁calls▁begin｜>}) that starts calls, and
 * calls from there, as OpenAI replies with content and then tool calls. Bare JSON calls count only
 * at the start of a reply, since JSON inside prose is no call.
 *
 * <p>Each call must name one of {@code names}, and there may be at most {@code maxCalls} of them.
 * Arguments are returned as the model wrote them, so that streamed fragments add up to them.
 */
final class ToolCallScanner {
  static final String TAG_OPEN = "<tool_call>";
  static final String TAG_CLOSE = "</tool_call>";
  static final String DS_CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
  static final String DS_CALLS_END = "<｜tool▁calls▁end｜>";
  static final String DS_CALL_BEGIN = "<｜tool▁call▁begin｜>";
  static final String DS_CALL_END = "<｜tool▁call▁end｜>";
  static final String DS_SEP = "<｜tool▁sep｜>";

  /** What the text so far is. */
  enum State {
    /** It may still become calls; no call's name is known yet. */
    PENDING,
    /** It cannot be calls. */
    CONTENT,
    /** Calls, the last one possibly unfinished: the text may continue them. */
    CALLS,
    /** Complete calls and nothing else (spaces aside). */
    COMPLETE,
    /** Calls that were followed by text that is not calls, from {@link Scan#end()} on. */
    BROKEN
  }

  /**
   * A call as far as the text goes.
   *
   * @param name the tool called
   * @param arguments the arguments' JSON text so far (all of it when {@code complete})
   * @param complete whether the call is finished
   */
  record Partial(String name, String arguments, boolean complete) {}

  /**
   * The reading of a text.
   *
   * @param state what the text is
   * @param calls the calls whose name is known, in order (only complete ones when {@code BROKEN})
   * @param end where the complete calls end in the text
   * @param contentEnd how much of the text's start is content for sure: before the calls, or, in
   *     state {@link State#CONTENT}, all but an unfinished tag at the end that may start calls
   */
  record Scan(State state, List<Partial> calls, int end, int contentEnd) {}

  private static final class Incomplete extends RuntimeException {
    @java.io.Serial private static final long serialVersionUID = 1L;

    Incomplete() {
      super(null, null, false, false);
    }
  }

  private static final class Mismatch extends RuntimeException {
    @java.io.Serial private static final long serialVersionUID = 1L;

    Mismatch() {
      super(null, null, false, false);
    }
  }

  private static final Incomplete INCOMPLETE = new Incomplete();
  private static final Mismatch MISMATCH = new Mismatch();

  private final Set<String> names;
  private final int maxCalls;
  private final boolean deepSeek;

  /**
   * A scanner for calls to {@code names}.
   *
   * @param maxCalls how many calls one reply may hold
   * @param deepSeek whether DeepSeek-V3's tool-call tokens are read
   */
  ToolCallScanner(Set<String> names, int maxCalls, boolean deepSeek) {
    this.names = Set.copyOf(names);
    this.maxCalls = maxCalls;
    this.deepSeek = deepSeek;
  }

  /** Reads {@code text}. */
  Scan scan(String text) {
    Scan whole = new Cursor(text, 0).run();
    if (whole.state() != State.CONTENT) {
      return whole;
    }
    // Content first: calls may start at a tag further on.
    for (int from = 0; ; ) {
      int tag = nextTag(text, from);
      if (tag < 0) {
        return new Scan(State.CONTENT, List.of(), 0, text.length() - unfinishedTag(text));
      }
      Scan calls = new Cursor(text, tag).run();
      if (calls.state() != State.CONTENT) {
        return new Scan(calls.state(), calls.calls(), calls.end(), tag);
      }
      from = tag + 1;
    }
  }

  private String[] tags() {
    return deepSeek ? new String[] {TAG_OPEN, DS_CALLS_BEGIN} : new String[] {TAG_OPEN};
  }

  /** Where the first tag that may start calls is in {@code text} from {@code from}, or -1. */
  private int nextTag(String text, int from) {
    int best = -1;
    for (String tag : tags()) {
      int i = text.indexOf(tag, from);
      if (i >= 0 && (best < 0 || i < best)) {
        best = i;
      }
    }
    return best;
  }

  /** The length of the longest end of {@code text} that is the start of a tag (0 if none). */
  private int unfinishedTag(String text) {
    int longest = 0;
    for (String tag : tags()) {
      for (int n = Math.min(tag.length() - 1, text.length()); n > longest; n--) {
        if (text.regionMatches(text.length() - n, tag, 0, n)) {
          longest = n;
          break;
        }
      }
    }
    return longest;
  }

  private final class Cursor {
    private final String s;
    private int p;
    private final List<Partial> calls = new ArrayList<>();
    private int end;
    private String openName;
    private int openArgs = -1;

    Cursor(String s, int start) {
      this.s = s;
      this.p = start;
    }

    Scan run() {
      try {
        ws();
        if (p == s.length()) {
          return new Scan(State.PENDING, List.of(), 0, 0);
        }
        if (deepSeek && s.startsWith(DS_CALLS_BEGIN.substring(0, 2), p)) {
          deepSeekCalls();
        } else if (s.charAt(p) == '[') {
          array();
        } else {
          objects();
        }
        ws();
        if (p != s.length()) {
          throw MISMATCH;
        }
        return new Scan(State.COMPLETE, List.copyOf(calls), end, 0);
      } catch (Incomplete e) {
        if (openName != null && openArgs >= 0) {
          calls.add(new Partial(openName, s.substring(openArgs), false));
        }
        return new Scan(calls.isEmpty() ? State.PENDING : State.CALLS, List.copyOf(calls), end, 0);
      } catch (Mismatch e) {
        return new Scan(calls.isEmpty() ? State.CONTENT : State.BROKEN, List.copyOf(calls), end, 0);
      }
    }

    private void objects() {
      while (true) {
        if (peek() == '<') {
          literal(TAG_OPEN);
          ws();
          jsonCall();
          ws();
          literal(TAG_CLOSE);
        } else {
          jsonCall();
        }
        end = p;
        ws();
        if (p == s.length()) {
          return;
        }
      }
    }

    private void array() {
      literal("[");
      ws();
      jsonCall();
      ws();
      while (peek() == ',') {
        p++;
        ws();
        jsonCall();
        ws();
      }
      literal("]");
      end = p;
    }

    private void jsonCall() {
      literal("{");
      ws();
      String first = string();
      ws();
      literal(":");
      ws();
      String name;
      String args;
      if (first.equals("name")) {
        name = name(string());
        ws();
        literal(",");
        ws();
        key("arguments");
        args = arguments(name);
      } else if (first.equals("arguments")) {
        args = arguments(null);
        ws();
        literal(",");
        ws();
        key("name");
        name = name(string());
      } else {
        throw MISMATCH;
      }
      ws();
      literal("}");
      finish(name, args);
    }

    private void key(String expected) {
      if (!string().equals(expected)) {
        throw MISMATCH;
      }
      ws();
      literal(":");
      ws();
    }

    private void deepSeekCalls() {
      literal(DS_CALLS_BEGIN);
      ws();
      do {
        literal(DS_CALL_BEGIN);
        literal("function");
        literal(DS_SEP);
        int from = p;
        while (p < s.length() && isNameChar(s.charAt(p))) {
          p++;
        }
        if (p == s.length()) {
          throw INCOMPLETE;
        }
        String name = name(s.substring(from, p));
        ws();
        boolean fenced = peek() == '`';
        if (fenced) {
          literal("```");
          if (peek() == 'j') {
            literal("json");
          }
          ws();
        }
        String args = arguments(name);
        ws();
        if (fenced) {
          literal("```");
          ws();
        }
        literal(DS_CALL_END);
        finish(name, args);
        end = p;
        ws();
      } while (oneOf(DS_CALL_BEGIN, DS_CALLS_END) == 0);
      literal(DS_CALLS_END);
      end = p;
    }

    /** Checks a called name, which must be a tool's and within the calls allowed. */
    private String name(String name) {
      if (!names.contains(name) || calls.size() >= maxCalls) {
        throw MISMATCH;
      }
      return name;
    }

    /** The arguments object's text; while it is unfinished a known name marks the call open. */
    private String arguments(String name) {
      if (peek() != '{') {
        throw MISMATCH;
      }
      openName = name;
      openArgs = p;
      skipValue();
      String args = s.substring(openArgs, p);
      openName = null;
      openArgs = -1;
      return args;
    }

    private void finish(String name, String args) {
      JsonNode v;
      try {
        v = Json.MAPPER.readTree(args);
      } catch (JacksonException e) {
        throw MISMATCH;
      }
      if (v == null || !v.isObject()) {
        throw MISMATCH;
      }
      calls.add(new Partial(name, args, true));
    }

    private void skipValue() {
      char c = peek();
      switch (c) {
        case '{' -> {
          p++;
          ws();
          if (peek() == '}') {
            p++;
            return;
          }
          while (true) {
            string();
            ws();
            literal(":");
            ws();
            skipValue();
            ws();
            if (oneOf(",", "}") == 1) {
              p++;
              return;
            }
            p++;
            ws();
          }
        }
        case '[' -> {
          p++;
          ws();
          if (peek() == ']') {
            p++;
            return;
          }
          while (true) {
            skipValue();
            ws();
            if (oneOf(",", "]") == 1) {
              p++;
              return;
            }
            p++;
            ws();
          }
        }
        case '"' -> string();
        case 't' -> literal("true");
        case 'f' -> literal("false");
        case 'n' -> literal("null");
        default -> {
          if (c != '-' && (c < '0' || c > '9')) {
            throw MISMATCH;
          }
          while (p < s.length() && "+-.eE0123456789".indexOf(s.charAt(p)) >= 0) {
            p++;
          }
          if (p == s.length()) {
            throw INCOMPLETE; // the number may go on
          }
        }
      }
    }

    /** A JSON string's value. */
    private String string() {
      literal("\"");
      StringBuilder sb = new StringBuilder();
      while (true) {
        char c = peek();
        p++;
        if (c == '"') {
          return sb.toString();
        }
        if (c == '\\') {
          char e = peek();
          p++;
          switch (e) {
            case 'u' -> {
              if (p + 4 > s.length()) {
                throw INCOMPLETE;
              }
              try {
                sb.append((char) Integer.parseInt(s.substring(p, p + 4), 16));
              } catch (NumberFormatException bad) {
                throw MISMATCH;
              }
              p += 4;
            }
            case 'n' -> sb.append('\n');
            case 't' -> sb.append('\t');
            case 'r' -> sb.append('\r');
            case 'b' -> sb.append('\b');
            case 'f' -> sb.append('\f');
            case '"', '\\', '/' -> sb.append(e);
            default -> throw MISMATCH;
          }
        } else if (c < 0x20) {
          throw MISMATCH;
        } else {
          sb.append(c);
        }
      }
    }

    /** The index of the literal the text goes on with (which is not consumed). */
    private int oneOf(String... literals) {
      boolean prefix = false;
      for (int i = 0; i < literals.length; i++) {
        String lit = literals[i];
        int n = Math.min(lit.length(), s.length() - p);
        if (s.regionMatches(p, lit, 0, n)) {
          if (n == lit.length()) {
            return i;
          }
          prefix = true;
        }
      }
      throw prefix ? INCOMPLETE : MISMATCH;
    }

    private void literal(String lit) {
      oneOf(lit);
      p += lit.length();
    }

    private char peek() {
      if (p == s.length()) {
        throw INCOMPLETE;
      }
      return s.charAt(p);
    }

    private void ws() {
      while (p < s.length() && Character.isWhitespace(s.charAt(p))) {
        p++;
      }
    }
  }

  private static boolean isNameChar(char c) {
    return (c >= 'A' && c <= 'Z')
        || (c >= 'a' && c <= 'z')
        || (c >= '0' && c <= '9')
        || c == '_'
        || c == '.'
        || c == '-';
  }
}
