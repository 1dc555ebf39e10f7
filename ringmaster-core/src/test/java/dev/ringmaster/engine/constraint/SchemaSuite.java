package dev.ringmaster.engine.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * A seeded, deterministic suite of distinct JSON schemas over the compiler's whole subset. Each
 * schema is rooted at an object (as structured-output requests mostly are) or, for one in four, at
 * another kind; its first property (or the root itself) cycles through {@link Kind}, so every kind
 * is the focus of an equal share of the suite, and the rest is drawn at random. Each schema carries
 * an upper bound on the bytes of any compact JSON text valid against it (a token is at least one
 * byte, so that many tokens plus the end token always let the output finish) and the keywords it
 * uses, read back from the schema itself.
 */
final class SchemaSuite {
  /** One schema of the suite, its byte bound and the features it uses. */
  record Entry(int index, JsonNode schema, int maxBytes, Set<String> features) {}

  /** What a generated sub-schema is. */
  enum Kind {
    INTEGER,
    NUMBER,
    INTEGER_RANGE,
    NUMBER_RANGE,
    BOOLEAN,
    NULL,
    TYPE_LIST,
    STRING_LENGTH,
    STRING_PATTERN,
    STRING_FORMAT,
    MULTIPLE_OF,
    PATTERN_LENGTH,
    ENUM,
    CONST,
    ARRAY,
    OBJECT,
    ANY_OF,
    ONE_OF,
    ALL_OF,
    REF
  }

  private static final Set<Kind> VARIED =
      Set.of(
          Kind.ENUM,
          Kind.CONST,
          Kind.STRING_PATTERN,
          Kind.MULTIPLE_OF,
          Kind.PATTERN_LENGTH,
          Kind.ARRAY,
          Kind.OBJECT,
          Kind.ANY_OF,
          Kind.ONE_OF,
          Kind.ALL_OF,
          Kind.REF);

  /** A sub-schema and the most bytes a value valid against it takes. */
  private record Sample(JsonNode schema, int maxBytes) {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  // Worst cases of the compiler's number grammars: sign, 16 digits, fraction, exponent.
  private static final int INTEGER_BYTES = 17;
  private static final int NUMBER_BYTES = 17 + 16 + 5;
  // A bounded number: "-0." and 15 digits is its longest form below 16 integer digits.
  private static final int BOUNDED_NUMBER_BYTES = 18;
  // A string character is at most a six-byte \\uXXXX escape.
  private static final int CHAR_BYTES = 6;
  // Quoted values of each format at their longest (fraction of six digits and an offset).
  private static final Map<String, Integer> FORMAT_BYTES =
      Map.of("date", 12, "time", 23, "date-time", 34, "uuid", 38);
  private static final String[] FORMATS = {"date", "time", "date-time", "uuid"};
  private static final int[] DIVISORS = {2, 3, 5, 7, 10, 12, 25, 100};
  // A multiple is written with at most 15 digits and a sign.
  private static final int MULTIPLE_BYTES = 16;
  private static final String[] WORDS = {
    "id", "name", "tags", "ok", "n", "x", "value", "kind", "city", "when", "score", "note"
  };
  private static final String[] STRINGS = {"red", "green", "blue", "a\"b", "café", "x y", ""};

  private final SplittableRandom rnd;
  private ObjectNode defs;

  private SchemaSuite(long seed) {
    this.rnd = new SplittableRandom(seed);
  }

  /**
   * {@code count} distinct schemas from {@code seed}, each valid output at most {@code maxBytes}
   * bytes long.
   *
   * @throws IllegalStateException when the seed cannot give that many within the bound
   */
  static List<Entry> generate(long seed, int count, int maxBytes) {
    SchemaSuite g = new SchemaSuite(seed);
    Set<String> seen = new HashSet<>();
    List<Entry> entries = new ArrayList<>();
    Kind[] kinds = Kind.values();
    for (int attempts = 0; entries.size() < count; attempts++) {
      int i = entries.size();
      if (attempts > 1000) {
        throw new IllegalStateException(
            "no new schema within " + maxBytes + " bytes for schema " + i + " of " + count);
      }
      Kind focus = kinds[i % kinds.length];
      // One in four is rooted at the focus itself where that kind varies enough to stay distinct.
      boolean bare = i % 4 == 3 && VARIED.contains(focus);
      Sample s = g.root(focus, bare);
      if (s.maxBytes() <= maxBytes && seen.add(s.schema().toString())) {
        entries.add(new Entry(i, s.schema(), s.maxBytes(), features(s.schema())));
        attempts = 0;
      }
    }
    return entries;
  }

  /** The keywords a schema uses, with {@code type:T} per type and {@code nested object}. */
  static Set<String> features(JsonNode schema) {
    Set<String> out = new TreeSet<>();
    collect(schema, false, out);
    return out;
  }

  private static void collect(JsonNode s, boolean insideObject, Set<String> out) {
    if (!s.isObject()) {
      return;
    }
    boolean isObject = s.path("type").asText().equals("object");
    if (isObject && insideObject) {
      out.add("nested object");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = s.properties().iterator(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String k = e.getKey();
      JsonNode v = e.getValue();
      out.add(k);
      switch (k) {
        case "type" -> {
          for (JsonNode t : v.isArray() ? v : F.arrayNode().add(v)) {
            out.add("type:" + t.asText());
          }
          if (v.isArray()) {
            out.add("type list");
          }
        }
        case "format" -> out.add("format:" + v.asText());
        case "pattern" -> {
          if (s.has("minLength") || s.has("maxLength")) {
            out.add("pattern with length");
          }
        }
        case "required" -> {
          if (v.size() < s.path("properties").size()) {
            out.add("optional property");
          }
        }
        case "properties", "$defs" -> {
          for (JsonNode sub : v) {
            collect(sub, insideObject || isObject, out);
          }
        }
        case "items" -> collect(v, insideObject || isObject, out);
        case "anyOf", "oneOf", "allOf" -> {
          for (JsonNode sub : v) {
            collect(sub, insideObject || isObject, out);
          }
        }
        default -> {}
      }
    }
    if (isObject && !s.has("required") && s.path("properties").size() > 0) {
      out.add("optional property");
    }
  }

  private Sample root(Kind focus, boolean bare) {
    defs = F.objectNode();
    Sample s;
    if (bare) {
      s = value(focus, 2);
    } else {
      s = object(2, value(focus, 1));
    }
    if (!defs.isEmpty()) {
      ObjectNode withDefs = ((ObjectNode) s.schema()).deepCopy();
      withDefs.set("$defs", defs);
      s = new Sample(withDefs, s.maxBytes());
    }
    return s;
  }

  private Kind randomKind(int depth) {
    Kind[] kinds = Kind.values();
    while (true) {
      Kind k = kinds[rnd.nextInt(kinds.length)];
      boolean compound =
          k == Kind.ARRAY
              || k == Kind.OBJECT
              || k == Kind.ANY_OF
              || k == Kind.ONE_OF
              || k == Kind.ALL_OF
              || k == Kind.REF;
      if (depth > 0 || !compound) {
        return k;
      }
    }
  }

  private Sample value(Kind kind, int depth) {
    ObjectNode s = F.objectNode();
    switch (kind) {
      case INTEGER -> {
        s.put("type", "integer");
        return new Sample(s, INTEGER_BYTES);
      }
      case NUMBER -> {
        s.put("type", "number");
        return new Sample(s, NUMBER_BYTES);
      }
      case INTEGER_RANGE -> {
        s.put("type", "integer");
        return new Sample(s, bounds(s, true));
      }
      case NUMBER_RANGE -> {
        s.put("type", "number");
        return new Sample(s, bounds(s, false));
      }
      case BOOLEAN -> {
        s.put("type", "boolean");
        return new Sample(s, 5);
      }
      case NULL -> {
        s.put("type", "null");
        return new Sample(s, 4);
      }
      case TYPE_LIST -> {
        ArrayNode types = s.putArray("type");
        List<String> pool = new ArrayList<>(List.of("integer", "boolean", "null", "string"));
        int bytes = 0;
        for (int i = 0, n = 2 + rnd.nextInt(2); i < n; i++) {
          String t = pool.remove(rnd.nextInt(pool.size()));
          types.add(t);
          // A bare string has no length bound: give it one (applies to strings only).
          bytes = Math.max(bytes, t.equals("string") ? 2 + CHAR_BYTES * 4 : INTEGER_BYTES);
        }
        if (s.get("type").toString().contains("string")) {
          s.put("maxLength", 4);
        }
        return new Sample(s, bytes);
      }
      case STRING_LENGTH -> {
        s.put("type", "string");
        int max = rnd.nextInt(7);
        int min = rnd.nextInt(max + 1);
        if (min > 0 || rnd.nextBoolean()) {
          s.put("minLength", min);
        }
        s.put("maxLength", max);
        return new Sample(s, 2 + CHAR_BYTES * max);
      }
      case STRING_PATTERN -> {
        RandomRegexes.Sample p = new RandomRegexes(rnd.nextLong()).next(true);
        s.put("type", "string");
        // Anchored or not: the compiler matches the whole string either way, a validator
        // searches, and a whole match is also found by a search.
        s.put("pattern", rnd.nextBoolean() ? "^(" + p.pattern() + ")$" : p.pattern());
        return new Sample(s, 2 + p.maxBytes());
      }
      case MULTIPLE_OF -> {
        s.put("type", rnd.nextBoolean() ? "integer" : "number");
        int d = DIVISORS[rnd.nextInt(DIVISORS.length)];
        s.put("multipleOf", d);
        int lo = rnd.nextInt(-1000, 1000);
        if (rnd.nextBoolean()) {
          s.put(rnd.nextBoolean() ? "minimum" : "exclusiveMinimum", lo);
        }
        if (rnd.nextBoolean()) {
          s.put(rnd.nextBoolean() ? "maximum" : "exclusiveMaximum", lo + d + rnd.nextInt(500));
        }
        return new Sample(s, MULTIPLE_BYTES);
      }
      case PATTERN_LENGTH -> {
        // Redrawn until some string of the pattern has a length within the bounds.
        while (true) {
          RandomRegexes.Sample p = new RandomRegexes(rnd.nextLong()).next(true);
          ObjectNode t = F.objectNode().put("type", "string").put("pattern", p.pattern());
          int max = rnd.nextInt(6);
          int min = rnd.nextInt(max + 1);
          if (min > 0 || rnd.nextBoolean()) {
            t.put("minLength", min);
          }
          if (min == 0 || rnd.nextBoolean()) {
            t.put("maxLength", max);
          }
          try {
            JsonSchemaCompiler.compile(t);
          } catch (UnsupportedConstraintException e) {
            continue;
          }
          // The pattern's strings hold no escapes: its byte bound holds.
          return new Sample(t, 2 + p.maxBytes());
        }
      }
      case STRING_FORMAT -> {
        String f = FORMATS[rnd.nextInt(FORMATS.length)];
        s.put("type", "string");
        s.put("format", f);
        return new Sample(s, FORMAT_BYTES.get(f));
      }
      case ENUM -> {
        ArrayNode e = s.putArray("enum");
        Set<String> distinct = new LinkedHashSet<>();
        int most = 0;
        for (int i = 0, n = 1 + rnd.nextInt(4); i < n; i++) {
          JsonNode v = literal();
          if (distinct.add(v.toString())) {
            e.add(v);
            most = Math.max(most, bytes(v));
          }
        }
        return new Sample(s, most);
      }
      case CONST -> {
        JsonNode v = rnd.nextInt(4) == 0 ? F.objectNode().set("k", literal()) : literal();
        s.set("const", v);
        return new Sample(s, bytes(v));
      }
      case ARRAY -> {
        Sample item = value(randomKind(depth - 1), depth - 1);
        int max = rnd.nextInt(4);
        int min = rnd.nextInt(max + 1);
        s.put("type", "array");
        s.set("items", item.schema());
        if (min > 0 || rnd.nextBoolean()) {
          s.put("minItems", min);
        }
        s.put("maxItems", max);
        // "[", " ", items with ", " between, " ", "]".
        return new Sample(s, 4 + max * (item.maxBytes() + 2));
      }
      case OBJECT -> {
        return object(depth, null);
      }
      case ANY_OF, ALL_OF -> {
        String k = kind == Kind.ANY_OF ? "anyOf" : "allOf";
        ArrayNode options = s.putArray(k);
        int most = 0;
        for (int i = 0, n = kind == Kind.ALL_OF ? 1 : 2 + rnd.nextInt(2); i < n; i++) {
          Sample o = value(randomKind(depth - 1), depth - 1);
          options.add(o.schema());
          most = Math.max(most, o.maxBytes());
        }
        return new Sample(s, most);
      }
      case ONE_OF -> {
        // Options of distinct kinds that share no value, so exactly one matches (the compiler
        // treats oneOf as anyOf).
        ArrayNode options = s.putArray("oneOf");
        List<Kind> pool =
            new ArrayList<>(
                List.of(Kind.INTEGER, Kind.BOOLEAN, Kind.NULL, Kind.STRING_LENGTH, Kind.ARRAY));
        if (depth > 1) {
          pool.add(Kind.OBJECT);
        }
        int most = 0;
        for (int i = 0, n = 2 + rnd.nextInt(2); i < n; i++) {
          Kind k = pool.remove(rnd.nextInt(pool.size()));
          Sample o = value(k, Math.max(1, depth - 1));
          options.add(o.schema());
          most = Math.max(most, o.maxBytes());
        }
        return new Sample(s, most);
      }
      case REF -> {
        Sample target = value(randomKind(depth - 1), depth - 1);
        String name = "def" + defs.size();
        defs.set(name, target.schema());
        s.put("$ref", "#/$defs/" + name);
        return new Sample(s, target.maxBytes());
      }
    }
    throw new AssertionError(kind);
  }

  /** An object schema whose first property is {@code first} (or random when null). */
  private Sample object(int depth, Sample first) {
    ObjectNode s = F.objectNode();
    s.put("type", "object");
    ObjectNode props = s.putObject("properties");
    ArrayNode required = F.arrayNode();
    int bytes = 4; // "{", " ", " ", "}"
    for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
      String key = WORDS[rnd.nextInt(WORDS.length)] + (i == 0 ? "" : "_" + i);
      Sample v = i == 0 && first != null ? first : value(randomKind(depth - 1), depth - 1);
      props.set(key, v.schema());
      if (rnd.nextInt(3) > 0) {
        required.add(key);
      }
      // "key" ":" " " value ", " with optional spaces.
      bytes += key.length() + 2 + 2 + v.maxBytes() + 2;
    }
    if (!required.isEmpty()) {
      s.set("required", required);
    }
    if (rnd.nextBoolean()) {
      s.put("additionalProperties", false);
    }
    return new Sample(s, bytes);
  }

  /**
   * Puts a random lower bound, upper bound or both (each inclusive or exclusive, some range always
   * left between them) on {@code s}, and gives the most bytes a value within them takes.
   */
  private int bounds(ObjectNode s, boolean integer) {
    int sides = rnd.nextInt(3); // 0: lower, 1: upper, 2: both
    double lo = bound(integer);
    double hi = lo + 2 + Math.abs(bound(integer));
    if (sides != 1) {
      put(s, rnd.nextBoolean() ? "minimum" : "exclusiveMinimum", lo, integer);
    }
    if (sides != 0) {
      put(s, rnd.nextBoolean() ? "maximum" : "exclusiveMaximum", hi, integer);
    }
    if (!integer) {
      return BOUNDED_NUMBER_BYTES;
    }
    if (sides != 2) {
      return INTEGER_BYTES;
    }
    // A sign and the digits of the wider bound.
    long wider = (long) Math.max(Math.abs(Math.floor(lo)), Math.abs(Math.ceil(hi)));
    return 1 + Long.toString(wider).length();
  }

  private double bound(boolean integer) {
    return switch (rnd.nextInt(4)) {
      case 0 -> rnd.nextInt(-3, 4);
      case 1 -> rnd.nextInt(-1000, 1000);
      case 2 ->
          integer
              ? rnd.nextLong(-1_000_000_000_000L, 1_000_000_000_000L)
              : rnd.nextInt(-9999, 10_000) / 1000.0;
      default -> rnd.nextInt(-400, 400) / 8.0;
    };
  }

  private static void put(ObjectNode s, String keyword, double v, boolean integer) {
    if (integer && v == Math.rint(v)) {
      s.put(keyword, (long) v);
    } else {
      s.put(keyword, v);
    }
  }

  private JsonNode literal() {
    return switch (rnd.nextInt(6)) {
      case 0 -> F.numberNode(rnd.nextInt(-50, 1000));
      case 1 -> F.numberNode(rnd.nextInt(-500, 500) / 8.0);
      case 2 -> F.booleanNode(rnd.nextBoolean());
      case 3 -> F.nullNode();
      default -> F.textNode(STRINGS[rnd.nextInt(STRINGS.length)]);
    };
  }

  private static int bytes(JsonNode v) {
    return v.toString().getBytes(StandardCharsets.UTF_8).length;
  }
}
