package dev.ringmaster.engine.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON schema to a {@link RegexNode} matching compact JSON (at most one space after
 * {@code :} and {@code ,}) that validates against it. The subset: {@code type} (one or a list),
 * {@code object} with {@code properties} (written in their declared order), {@code required} and
 * {@code additionalProperties}, {@code string} with {@code minLength}, {@code maxLength}, {@code
 * pattern} (matched against the whole string; with length bounds, by intersecting the automata:
 * {@link DfaIntersection}) or {@code format} date, time, date-time or uuid, {@code number} and
 * {@code integer} with {@code minimum}, {@code maximum}, {@code exclusiveMinimum} and {@code
 * exclusiveMaximum} (exact: {@link NumericRanges}) and an integer {@code multipleOf} (the range
 * intersected with a remainder automaton), {@code boolean}, {@code null}, {@code array} with {@code
 * items}, {@code minItems} and {@code maxItems}, {@code enum}, {@code const}, {@code anyOf}, {@code
 * oneOf}, a one-element {@code allOf}, and local non-recursive {@code $ref}s. A schema without a
 * type accepts any JSON value nested at most {@value #ANY_DEPTH} deep. Any other keyword is refused
 * with an {@link UnsupportedConstraintException} naming it, and so is a keyword the subset would
 * drop: one beside {@code $ref}, {@code const}, {@code enum}, {@code anyOf}, {@code oneOf} or
 * {@code allOf} (but a {@code type} all enum / const values have), and {@code format} beside {@code
 * pattern} or a length bound.
 */
final class JsonSchemaCompiler {
  /** Nesting depth of objects and arrays a schema-free value may have. */
  static final int ANY_DEPTH = 3;

  private static final Set<String> ANNOTATIONS =
      Set.of(
          "title",
          "description",
          "$schema",
          "$id",
          "$comment",
          "default",
          "examples",
          "deprecated",
          "readOnly",
          "writeOnly",
          "$defs",
          "definitions",
          "strict");
  private static final Set<String> KEYWORDS =
      Set.of(
          "type",
          "properties",
          "required",
          "additionalProperties",
          "minLength",
          "maxLength",
          "pattern",
          "format",
          "items",
          "minItems",
          "maxItems",
          "minimum",
          "maximum",
          "exclusiveMinimum",
          "exclusiveMaximum",
          "multipleOf",
          "enum",
          "const",
          "anyOf",
          "oneOf",
          "allOf",
          "$ref");
  // No backslash-u escapes of UTF-16 surrogates: a lone one is not Unicode, and a pair would count
  // as two
  // characters against minLength / maxLength where JSON Schema counts one (the character can be
  // written as its UTF-8 bytes instead).
  private static final String CHAR =
      "([^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]"
          + "|\\\\u([0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))";

  /**
   * Keywords that constrain values of one type, by that type: in a schema without {@code type}
   * (which allows any value) they would be dropped, so such a schema is refused.
   */
  private static final List<Map.Entry<String, String>> TYPED_KEYWORDS =
      List.of(
          Map.entry("minLength", "string"),
          Map.entry("maxLength", "string"),
          Map.entry("pattern", "string"),
          Map.entry("format", "string"),
          Map.entry("items", "array"),
          Map.entry("minItems", "array"),
          Map.entry("maxItems", "array"),
          Map.entry("required", "object"),
          Map.entry("additionalProperties", "object"));

  private static final java.math.BigDecimal BOUND_LIMIT = java.math.BigDecimal.TEN.pow(38);
  private static final List<String> NUMERIC_KEYWORDS =
      List.of("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf");

  /** The largest multiple written: 15 digits, below 2^53 (so an exact double). */
  private static final java.math.BigDecimal MULTIPLE_LIMIT =
      java.math.BigDecimal.TEN.pow(15).subtract(java.math.BigDecimal.ONE);

  private static final RegexNode MULTIPLE = regex("-?(0|[1-9][0-9]{0,14})");

  /** Largest {@code multipleOf}: the remainder automaton has a state per remainder. */
  static final int MAX_DIVISOR = 1_000_000;

  /**
   * Most states of an intersection ({@code multipleOf} with its range, {@code pattern} with its
   * length bounds): past it the schema is refused, naming the keyword.
   */
  static final int MAX_INTERSECTION_STATES = 100_000;

  private static final List<String> EXCLUSIVE =
      List.of("$ref", "const", "enum", "anyOf", "oneOf", "allOf");
  private static final RegexNode WS = new RegexNode.Repeat(RegexNode.ofByte(' '), 0, 1);
  private static final RegexNode STRING = regex("\"" + CHAR + "*\"");
  private static final RegexNode INTEGER = regex("-?(0|[1-9][0-9]{0,15})");
  private static final RegexNode NUMBER =
      regex("-?(0|[1-9][0-9]{0,15})(\\.[0-9]{1,15})?([eE][+-]?[0-9]{1,3})?");
  // RFC 3339 full-date: each month's own last day, and 02-29 only in leap years (divisible by 4,
  // centuries only when divisible by 400).
  private static final String DATE =
      "([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
          + "|02-(0[1-9]|1[0-9]|2[0-8]))"
          + "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)";
  // RFC 3339 full-time: the offset is required, and kept within +-18:00, the range java.time (and
  // so many validators) accepts.
  private static final String TIME =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?"
          + "(Z|[+-]((0[0-9]|1[0-7]):[0-5][0-9]|18:00))";
  private static final Map<String, String> FORMATS =
      Map.of(
          "date",
          DATE,
          "time",
          TIME,
          "date-time",
          DATE + "T" + TIME,
          "uuid",
          "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

  private final JsonNode root;
  private final Deque<String> refs = new ArrayDeque<>();

  private JsonSchemaCompiler(JsonNode root) {
    this.root = root;
  }

  /** The node matching the JSON texts valid against {@code schema}. */
  static RegexNode compile(JsonNode schema) {
    return new JsonSchemaCompiler(schema).value(schema, "#");
  }

  /** Any JSON object (the {@code json_object} response format). */
  static RegexNode anyObject() {
    return object(ANY_DEPTH);
  }

  private static RegexNode regex(String pattern) {
    return RegexParser.parse(pattern);
  }

  private static RegexNode lit(String s) {
    return RegexNode.literal(s.getBytes(StandardCharsets.UTF_8));
  }

  private static RegexNode seq(RegexNode... parts) {
    return new RegexNode.Seq(List.of(parts));
  }

  private static RegexNode alt(List<RegexNode> options) {
    return options.size() == 1 ? options.getFirst() : new RegexNode.Alt(options);
  }

  private static UnsupportedConstraintException unsupported(String path, String what) {
    return new UnsupportedConstraintException(
        "json_schema at " + path + ": " + what + " is not supported");
  }

  private RegexNode value(JsonNode s, String path) {
    if (s.isBoolean()) {
      if (!s.booleanValue()) {
        throw unsupported(path, "the schema false (matches nothing)");
      }
      return any(ANY_DEPTH);
    }
    if (!s.isObject()) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": a schema must be an object or a boolean, got " + s);
    }
    for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!KEYWORDS.contains(k) && !ANNOTATIONS.contains(k)) {
        throw unsupported(path, "the keyword '" + k + "'");
      }
    }
    refuseIgnoredSiblings(s, path);
    if (s.has("$ref")) {
      return ref(s.get("$ref").asText(), path);
    }
    if (s.has("const")) {
      return lit(s.get("const").toString());
    }
    if (s.has("enum")) {
      List<RegexNode> options = new ArrayList<>();
      for (JsonNode v : s.get("enum")) {
        options.add(lit(v.toString()));
      }
      if (options.isEmpty()) {
        throw unsupported(path, "an empty enum");
      }
      return alt(options);
    }
    for (String k : List.of("anyOf", "oneOf")) {
      if (s.has(k)) {
        List<RegexNode> options = new ArrayList<>();
        int i = 0;
        for (JsonNode sub : s.get(k)) {
          options.add(value(sub, path + "/" + k + "/" + i++));
        }
        if (options.isEmpty()) {
          throw unsupported(path, "an empty " + k);
        }
        return alt(options);
      }
    }
    if (s.has("allOf")) {
      if (s.get("allOf").size() != 1) {
        throw unsupported(path, "allOf with more than one schema");
      }
      return value(s.get("allOf").get(0), path + "/allOf/0");
    }
    JsonNode type = s.get("type");
    if (!hasNumericType(type)) {
      for (String k : NUMERIC_KEYWORDS) {
        if (s.has(k)) {
          throw unsupported(
              path, "'" + k + "' without type integer or number (name the type it bounds)");
        }
      }
    }
    if (type == null) {
      if (s.has("properties")) {
        return object(s, path);
      }
      // any value could be written, strings and arrays included, which these keywords constrain
      for (Map.Entry<String, String> k : TYPED_KEYWORDS) {
        if (s.has(k.getKey())) {
          throw unsupported(
              path,
              "'"
                  + k.getKey()
                  + "' without a type (give \"type\": \""
                  + k.getValue()
                  + "\" so that it is kept)");
        }
      }
      return any(ANY_DEPTH);
    }
    if (type.isArray()) {
      List<RegexNode> options = new ArrayList<>();
      for (JsonNode t : type) {
        options.add(typed(t.asText(), s, path));
      }
      return alt(options);
    }
    return typed(type.asText(), s, path);
  }

  /**
   * Refuses a constraint keyword beside one that decides the whole value ({@code $ref}, {@code
   * const}, {@code enum}, {@code anyOf}, {@code oneOf}, {@code allOf}): it would be dropped, and
   * the output could break it. A {@code type} beside {@code enum} or {@code const} is kept when
   * every value has one of its types.
   */
  private static void refuseIgnoredSiblings(JsonNode s, String path) {
    for (String k : EXCLUSIVE) {
      if (!s.has(k)) {
        continue;
      }
      for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
        String other = it.next();
        boolean typeOfValues = other.equals("type") && (k.equals("const") || k.equals("enum"));
        if (other.equals(k) || !KEYWORDS.contains(other) || typeOfValues) {
          continue;
        }
        throw unsupported(
            path, "'" + other + "' beside '" + k + "' (put the constraints in one place)");
      }
      if (s.has("type")) {
        JsonNode values =
            k.equals("const") ? JsonNodeFactory.instance.arrayNode().add(s.get(k)) : s.get(k);
        for (JsonNode v : values) {
          if (!hasType(v, s.get("type"))) {
            throw new UnsupportedConstraintException(
                "json_schema at "
                    + path
                    + ": the "
                    + k
                    + " value "
                    + v
                    + " is not of type "
                    + s.get("type"));
          }
        }
      }
      return;
    }
  }

  private static boolean hasType(JsonNode v, JsonNode type) {
    for (JsonNode t : type.isArray() ? type : JsonNodeFactory.instance.arrayNode().add(type)) {
      boolean has =
          switch (t.asText()) {
            case "integer" -> v.isIntegralNumber();
            case "number" -> v.isNumber();
            case "string" -> v.isTextual();
            case "boolean" -> v.isBoolean();
            case "null" -> v.isNull();
            case "object" -> v.isObject();
            case "array" -> v.isArray();
            default -> false;
          };
      if (has) {
        return true;
      }
    }
    return false;
  }

  private RegexNode ref(String ref, String path) {
    if (!ref.startsWith("#")) {
      throw unsupported(path, "the remote $ref '" + ref + "' (only local '#/...' refs are)");
    }
    if (refs.contains(ref)) {
      throw unsupported(path, "the recursive $ref '" + ref + "'");
    }
    JsonNode target = root.at(ref.substring(1));
    if (target.isMissingNode()) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": $ref '" + ref + "' points at nothing");
    }
    refs.push(ref);
    try {
      return value(target, ref);
    } finally {
      refs.pop();
    }
  }

  private RegexNode typed(String type, JsonNode s, String path) {
    return switch (type) {
      case "object" -> object(s, path);
      case "array" -> array(s, path);
      case "string" -> string(s, path);
      case "integer" -> numeric(s, path, true);
      case "number" -> numeric(s, path, false);
      case "boolean" -> alt(List.of(lit("true"), lit("false")));
      case "null" -> lit("null");
      default -> throw unsupported(path, "the type '" + type + "'");
    };
  }

  private static boolean hasNumericType(JsonNode type) {
    if (type == null) {
      return false;
    }
    for (JsonNode t : type.isArray() ? type : JsonNodeFactory.instance.arrayNode().add(type)) {
      if (t.asText().equals("integer") || t.asText().equals("number")) {
        return true;
      }
    }
    return false;
  }

  /**
   * An integer or number, within its bounds when it has any, and a multiple of its {@code
   * multipleOf} when it has one (then written as an integer of at most 15 digits: a number that is
   * a multiple of an integer is one).
   */
  private static RegexNode numeric(JsonNode s, String path, boolean integer) {
    NumericRanges.Bound lower =
        tighter(bound(s, "minimum", path), bound(s, "exclusiveMinimum", path), 1);
    NumericRanges.Bound upper =
        tighter(bound(s, "maximum", path), bound(s, "exclusiveMaximum", path), -1);
    if (!s.has("multipleOf")) {
      return range(lower, upper, path, integer);
    }
    int d = divisor(s.get("multipleOf"), path);
    // Multiples take at most 15 digits: below 2^53, where a reader that parses the value as a
    // double holds it exactly, and so finds the same remainder.
    RegexNode range =
        lower == null && upper == null
            ? MULTIPLE
            : range(
                tighter(lower, new NumericRanges.Bound(MULTIPLE_LIMIT.negate(), false), 1),
                tighter(upper, new NumericRanges.Bound(MULTIPLE_LIMIT, false), -1),
                path,
                true);
    ByteDfa multiples;
    try {
      multiples =
          DfaIntersection.intersect(
              ByteDfa.of(range), DfaIntersection.multiplesOf(d), MAX_INTERSECTION_STATES);
    } catch (DfaIntersection.TooLarge e) {
      throw new UnsupportedConstraintException(
          "json_schema at "
              + path
              + ": 'multipleOf' "
              + d
              + " needs "
              + e.getMessage()
              + (lower == null && upper == null ? "" : " for values " + describe(lower, upper))
              + " (use a smaller divisor or a narrower minimum / maximum)");
    }
    if (multiples == null) {
      throw new UnsupportedConstraintException(
          "json_schema at "
              + path
              + ": no multiple of "
              + d
              + " is "
              + describe(lower, upper)
              + (integer ? "" : " (multiples are written as integers)"));
    }
    return new RegexNode.Automaton(multiples);
  }

  /** The positive integer divisor {@code multipleOf} gives, refused when it is anything else. */
  private static int divisor(JsonNode v, String path) {
    if (!v.isNumber() || v.decimalValue().signum() <= 0) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": 'multipleOf' must be a number above 0, got " + v);
    }
    java.math.BigDecimal d = new java.math.BigDecimal(v.asText()).stripTrailingZeros();
    if (d.scale() > 0) {
      throw unsupported(
          path,
          "the fractional 'multipleOf' "
              + v.asText()
              + " (only integer divisors are compiled exactly; scale the value so that the"
              + " divisor is an integer)");
    }
    if (d.compareTo(java.math.BigDecimal.valueOf(MAX_DIVISOR)) > 0) {
      throw unsupported(
          path,
          "the 'multipleOf' " + d.toPlainString() + " (divisors are at most " + MAX_DIVISOR + ")");
    }
    return d.intValueExact();
  }

  /** The integers or numbers within the bounds (either may be null). */
  private static RegexNode range(
      NumericRanges.Bound lower, NumericRanges.Bound upper, String path, boolean integer) {
    if (lower == null && upper == null) {
      return integer ? INTEGER : NUMBER;
    }
    RegexNode range =
        integer ? NumericRanges.integer(lower, upper) : NumericRanges.number(lower, upper);
    if (range == null) {
      throw new UnsupportedConstraintException(
          "json_schema at "
              + path
              + ": no "
              + (integer
                  ? "integer"
                  : "number (with a fraction, of at most " + NumericRanges.PRECISION + " digits)")
              + " is "
              + describe(lower, upper));
    }
    return range;
  }

  private static String describe(NumericRanges.Bound lower, NumericRanges.Bound upper) {
    List<String> parts = new ArrayList<>();
    if (lower != null) {
      parts.add((lower.exclusive() ? "above " : "at least ") + lower.value().toPlainString());
    }
    if (upper != null) {
      parts.add((upper.exclusive() ? "below " : "at most ") + upper.value().toPlainString());
    }
    return String.join(" and ", parts);
  }

  /** The bound {@code keyword} sets, or null when it is absent. */
  private static NumericRanges.Bound bound(JsonNode s, String keyword, String path) {
    JsonNode v = s.get(keyword);
    if (v == null) {
      return null;
    }
    boolean exclusive = keyword.startsWith("exclusive");
    if (exclusive && v.isBoolean()) {
      throw unsupported(
          path,
          "the boolean '"
              + keyword
              + "' of draft 4 (write the bound itself, e.g. \""
              + keyword
              + "\": 0)");
    }
    if (!v.isNumber()) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": '" + keyword + "' must be a number, got " + v);
    }
    // An overflowing literal (1e999) parses as an infinite double; a bound past 10^38 would only
    // make the automaton huge.
    if ((v.isDouble() || v.isFloat()) && !Double.isFinite(v.doubleValue())
        || v.decimalValue().abs().compareTo(BOUND_LIMIT) > 0) {
      throw unsupported(
          path,
          "the bound '" + keyword + "' " + v.asText() + " (bounds are at most 1e38 in magnitude)");
    }
    // The text a validator reads the bound from: a double's shortest decimal, not its binary value.
    return new NumericRanges.Bound(new java.math.BigDecimal(v.asText()), exclusive);
  }

  /** The tighter of two bounds ({@code sign} 1: the higher one, -1: the lower one). */
  private static NumericRanges.Bound tighter(
      NumericRanges.Bound a, NumericRanges.Bound b, int sign) {
    if (a == null || b == null) {
      return a == null ? b : a;
    }
    int c = a.value().compareTo(b.value()) * sign;
    if (c != 0) {
      return c > 0 ? a : b;
    }
    return a.exclusive() ? a : b;
  }

  private RegexNode string(JsonNode s, String path) {
    for (String[] pair :
        new String[][] {{"format", "pattern"}, {"format", "minLength"}, {"format", "maxLength"}}) {
      if (s.has(pair[0]) && s.has(pair[1])) {
        throw unsupported(
            path, "'" + pair[1] + "' together with '" + pair[0] + "' (a string takes one of them)");
      }
    }
    if (s.has("format")) {
      String f = s.get("format").asText();
      String p = FORMATS.get(f);
      if (p == null) {
        throw unsupported(
            path, "the string format '" + f + "' (supported: " + FORMATS.keySet() + ")");
      }
      return regex("\"" + p + "\"");
    }
    int min = s.path("minLength").asInt(0);
    int max = s.has("maxLength") ? s.get("maxLength").asInt() : -1;
    if (max >= 0 && max < min) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": maxLength " + max + " is below minLength " + min);
    }
    boolean bounded = min > 0 || max >= 0;
    RegexNode chars = new RegexNode.Repeat(regex(CHAR), min, max);
    if (!s.has("pattern")) {
      return bounded ? seq(lit("\""), chars, lit("\"")) : STRING;
    }
    // Only what the string can hold unescaped: a pattern such as [^,]* would otherwise let a
    // quote or a backslash end or break the JSON.
    RegexNode pattern = RegexNode.jsonStringSafe(regex(s.get("pattern").asText()));
    if (!bounded) {
      return seq(lit("\""), pattern, lit("\""));
    }
    return seq(lit("\""), patternWithin(pattern, chars, min, max, path), lit("\""));
  }

  /**
   * The pattern's strings of min..max characters: its automaton intersected with that of the
   * characters, which counts each code point (and each escape, though the pattern's side writes
   * none) as one, as JSON Schema does.
   */
  private static RegexNode patternWithin(
      RegexNode pattern, RegexNode chars, int min, int max, String path) {
    String lengths = "minLength " + min + (max < 0 ? "" : " and maxLength " + max);
    ByteDfa within;
    try {
      within =
          matchesNothing(pattern)
              ? null
              : DfaIntersection.intersect(
                  ByteDfa.of(pattern),
                  DfaIntersection.Side.of(ByteDfa.of(chars)),
                  MAX_INTERSECTION_STATES);
    } catch (DfaIntersection.TooLarge e) {
      throw new UnsupportedConstraintException(
          "json_schema at "
              + path
              + ": 'pattern' with "
              + lengths
              + " needs "
              + e.getMessage()
              + " (simplify the pattern or narrow the lengths)");
    }
    if (within == null) {
      throw new UnsupportedConstraintException(
          "json_schema at "
              + path
              + ": no string matching 'pattern' (without characters JSON must escape) has "
              + lengths);
    }
    return new RegexNode.Automaton(within);
  }

  /** Whether the expression matches no string at all (a pattern of only escaped characters). */
  private static boolean matchesNothing(RegexNode n) {
    return switch (n) {
      case RegexNode.ByteSet(java.util.BitSet bytes) -> bytes.isEmpty();
      case RegexNode.Seq(List<RegexNode> parts) ->
          parts.stream().anyMatch(JsonSchemaCompiler::matchesNothing);
      case RegexNode.Alt(List<RegexNode> options) ->
          options.stream().allMatch(JsonSchemaCompiler::matchesNothing);
      case RegexNode.Repeat(RegexNode inner, int min, int max) -> min > 0 && matchesNothing(inner);
      case RegexNode.Automaton a -> false; // trimmed: it matches something
    };
  }

  private RegexNode array(JsonNode s, String path) {
    RegexNode item = s.has("items") ? value(s.get("items"), path + "/items") : any(ANY_DEPTH - 1);
    int min = s.path("minItems").asInt(0);
    int max = s.has("maxItems") ? s.get("maxItems").asInt() : -1;
    if (max >= 0 && max < min) {
      throw new UnsupportedConstraintException(
          "json_schema at " + path + ": maxItems " + max + " is below minItems " + min);
    }
    return list("[", "]", item, min, max);
  }

  /** {@code open item (, item)* close} with min..max items. */
  private static RegexNode list(String open, String close, RegexNode item, int min, int max) {
    RegexNode more = seq(lit(","), WS, item);
    RegexNode body;
    if (max == 0) {
      body = RegexNode.EMPTY;
    } else {
      RegexNode rest = new RegexNode.Repeat(more, Math.max(0, min - 1), max < 0 ? -1 : max - 1);
      body = seq(item, rest);
      if (min == 0) {
        body = new RegexNode.Repeat(body, 0, 1);
      }
    }
    return seq(lit(open), WS, body, WS, lit(close));
  }

  private RegexNode object(JsonNode s, String path) {
    JsonNode props = s.get("properties");
    if (props == null || props.isEmpty()) {
      JsonNode extra = s.get("additionalProperties");
      if (extra != null && extra.isObject()) {
        RegexNode member =
            seq(STRING, WS, lit(":"), WS, value(extra, path + "/additionalProperties"));
        return list("{", "}", member, 0, -1);
      }
      if (extra != null && extra.isBoolean() && !extra.booleanValue()) {
        return seq(lit("{"), WS, lit("}"));
      }
      return object(ANY_DEPTH);
    }
    Set<String> required = new java.util.HashSet<>();
    for (JsonNode r : s.path("required")) {
      if (!props.has(r.asText())) {
        throw new UnsupportedConstraintException(
            "json_schema at "
                + path
                + ": required property '"
                + r.asText()
                + "' is not in properties");
      }
      required.add(r.asText());
    }
    List<RegexNode> members = new ArrayList<>();
    List<Boolean> needed = new ArrayList<>();
    for (Map.Entry<String, JsonNode> e : props.properties()) {
      String key = com.fasterxml.jackson.databind.node.TextNode.valueOf(e.getKey()).toString();
      members.add(
          seq(lit(key), WS, lit(":"), WS, value(e.getValue(), path + "/properties/" + e.getKey())));
      needed.add(required.contains(e.getKey()));
    }
    // After the first member written every later one is ", member" (optional ones may be left out);
    // before it, an optional member is either the first or skipped.
    int n = members.size();
    RegexNode[] after = new RegexNode[n + 1];
    RegexNode[] first = new RegexNode[n + 1];
    after[n] = RegexNode.EMPTY;
    first[n] = RegexNode.EMPTY;
    for (int i = n - 1; i >= 0; i--) {
      RegexNode comma = seq(lit(","), WS, members.get(i));
      after[i] =
          needed.get(i)
              ? seq(comma, after[i + 1])
              : seq(new RegexNode.Repeat(comma, 0, 1), after[i + 1]);
      RegexNode here = seq(members.get(i), after[i + 1]);
      first[i] = needed.get(i) ? here : alt(List.of(here, first[i + 1]));
    }
    return seq(lit("{"), WS, first[0], WS, lit("}"));
  }

  /** Any JSON value with objects and arrays nested at most {@code depth} deep. */
  private static RegexNode any(int depth) {
    List<RegexNode> options =
        new ArrayList<>(List.of(STRING, NUMBER, lit("true"), lit("false"), lit("null")));
    if (depth > 0) {
      options.add(object(depth));
      options.add(list("[", "]", any(depth - 1), 0, -1));
    }
    return alt(options);
  }

  private static RegexNode object(int depth) {
    RegexNode member = seq(STRING, WS, lit(":"), WS, any(depth - 1));
    return list("{", "}", member, 0, -1);
  }
}
