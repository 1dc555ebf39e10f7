package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The keywords compiled by intersecting automata, {@code multipleOf} (with and without bounds) and
 * {@code pattern} with {@code minLength} / {@code maxLength}, are exact against networknt
 * json-schema-validator on random schemas: every string the automaton generates is valid, and of
 * the values sampled at and around the bounds (and at random), the automaton accepts exactly those
 * the validator does, among the ones it can write (integers of at most 15 digits; strings the
 * pattern matches without escapes).
 */
class IntersectionKeywordsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SchemaRegistry VALIDATORS =
      SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
  // The compiler writes multiples of at most 15 digits, below 2^53, where the validator (which
  // reads larger integers as doubles) is exact too.
  private static final BigInteger EXACT = BigInteger.TEN.pow(15).subtract(BigInteger.ONE);
  private static final int[] DIVISORS = {1, 2, 3, 5, 7, 10, 12, 25, 100, 250};

  @Test
  void multipleOfIsExact() throws Exception {
    SplittableRandom rnd = new SplittableRandom(26);
    for (int i = 0; i < 60; i++) {
      int d = rnd.nextBoolean() ? DIVISORS[rnd.nextInt(DIVISORS.length)] : 1 + rnd.nextInt(300);
      ObjectNode schema =
          JSON.createObjectNode().put("type", rnd.nextBoolean() ? "integer" : "number");
      schema.put("multipleOf", d);
      List<BigInteger> bounds = new ArrayList<>();
      int sides = rnd.nextInt(4); // 0: none, 1: lower, 2: upper, 3: both
      long lo = rnd.nextLong(-100_000, 100_000);
      long hi = lo + rnd.nextLong(0, 3 * d + 50);
      if ((sides & 1) != 0) {
        schema.put(rnd.nextBoolean() ? "minimum" : "exclusiveMinimum", lo);
        bounds.add(BigInteger.valueOf(lo));
      }
      if ((sides & 2) != 0) {
        schema.put(rnd.nextBoolean() ? "maximum" : "exclusiveMaximum", hi);
        bounds.add(BigInteger.valueOf(hi));
      }
      Set<BigInteger> values = new LinkedHashSet<>();
      BigInteger div = BigInteger.valueOf(d);
      bounds.add(BigInteger.ZERO);
      bounds.add(EXACT);
      bounds.add(EXACT.negate());
      for (BigInteger b : bounds) {
        BigInteger below = b.divide(div).multiply(div);
        for (int k = -2; k <= 2; k++) {
          BigInteger m = below.add(div.multiply(BigInteger.valueOf(k)));
          for (int e = -1; e <= 1; e++) {
            values.add(m.add(BigInteger.valueOf(e)));
          }
        }
      }
      for (int k = 0; k < 20; k++) {
        values.add(BigInteger.valueOf(rnd.nextLong(lo - 10L * d, hi + 10L * d)));
      }
      List<String> texts = new ArrayList<>();
      for (BigInteger v : values) {
        if (v.abs().compareTo(EXACT) <= 0) {
          texts.add(v.toString());
        }
      }
      checkExact(schema, texts, rnd, "no multiple of ");
    }
  }

  @Test
  void patternWithLengthBoundsIsExact() throws Exception {
    SplittableRandom rnd = new SplittableRandom(27);
    for (int i = 0; i < 60; i++) {
      String pattern = new RandomRegexes(rnd.nextLong()).next(true).pattern();
      ObjectNode schema = JSON.createObjectNode().put("type", "string").put("pattern", pattern);
      int max = rnd.nextInt(8);
      int min = rnd.nextInt(max + 1);
      int sides = 1 + rnd.nextInt(3); // 1: minLength, 2: maxLength, 3: both
      if ((sides & 1) != 0) {
        schema.put("minLength", min);
      }
      if ((sides & 2) != 0) {
        schema.put("maxLength", max);
      }
      // Strings the pattern matches, of every length: the bounds alone decide whether they are
      // valid.
      ByteDfa patternOnly =
          ByteDfa.of(
              JsonSchemaCompiler.compile(
                  JSON.createObjectNode().put("type", "string").put("pattern", pattern)));
      Set<String> texts = new LinkedHashSet<>();
      for (int k = 0; k < 80; k++) {
        texts.add(generate(patternOnly, rnd));
      }
      checkExact(schema, new ArrayList<>(texts), rnd, "no string matching 'pattern'");
      // Strings of the right lengths that need not match: accepted only when valid.
      ObjectNode lengthsOnly = schema.deepCopy();
      lengthsOnly.remove("pattern");
      ByteDfa lengths = ByteDfa.of(JsonSchemaCompiler.compile(lengthsOnly));
      ByteDfa dfa = compiled(schema);
      for (int k = 0; k < 40 && dfa != null; k++) {
        String t = generate(lengths, rnd);
        if (accepts(dfa, t)) {
          assertThat(valid(schema, t)).as("%s accepts %s", schema, t).isTrue();
        }
      }
    }
  }

  @Test
  void lengthCountsCodePointsNotBytesOrUtf16Units() throws Exception {
    JsonNode schema =
        JSON.readTree("{\"type\": \"string\", \"pattern\": \"(é|😀|a)+\", \"maxLength\": 2}");
    ByteDfa dfa = ByteDfa.of(JsonSchemaCompiler.compile(schema));
    for (String s : List.of("😀😀", "é😀", "a", "😀")) {
      String t = JSON.writeValueAsString(s);
      assertThat(accepts(dfa, t)).as(t).isTrue();
      assertThat(valid(schema, t)).as(t).isTrue();
    }
    for (String s : List.of("😀😀😀", "aéa", "")) {
      String t = JSON.writeValueAsString(s);
      assertThat(accepts(dfa, t)).as(t).isFalse();
      assertThat(valid(schema, t)).as(t).isFalse();
    }
  }

  @Test
  void multipleOfInsideAnObjectAndAnArray() throws Exception {
    JsonNode schema =
        JSON.readTree(
            """
            {"type": "object", "properties": {
              "n": {"type": "integer", "multipleOf": 7, "minimum": -30, "maximum": 30},
              "xs": {"type": "array", "items": {"type": "number", "multipleOf": 4}, "maxItems": 3},
              "s": {"type": "string", "pattern": "[a-c]*", "minLength": 2, "maxLength": 3}},
             "required": ["n", "xs", "s"], "additionalProperties": false}
            """);
    ByteDfa dfa = ByteDfa.of(JsonSchemaCompiler.compile(schema));
    for (String t :
        List.of(
            "{\"n\":-28,\"xs\":[],\"s\":\"ab\"}",
            "{\"n\": 0, \"xs\": [4, -8, 1000], \"s\": \"abc\"}",
            "{\"n\":28,\"xs\":[0],\"s\":\"cc\"}")) {
      assertThat(accepts(dfa, t)).as(t).isTrue();
      assertThat(valid(schema, t)).as(t).isTrue();
    }
    for (String t :
        List.of(
            "{\"n\":35,\"xs\":[],\"s\":\"ab\"}",
            "{\"n\":3,\"xs\":[],\"s\":\"ab\"}",
            "{\"n\":7,\"xs\":[6],\"s\":\"ab\"}",
            "{\"n\":7,\"xs\":[],\"s\":\"a\"}",
            "{\"n\":7,\"xs\":[],\"s\":\"abca\"}")) {
      assertThat(accepts(dfa, t)).as(t).isFalse();
      assertThat(valid(schema, t)).as(t).isFalse();
    }
    SplittableRandom rnd = new SplittableRandom(28);
    for (int i = 0; i < 100; i++) {
      String t = generate(dfa, rnd);
      assertThat(valid(schema, t)).as("generated %s", t).isTrue();
    }
  }

  /**
   * Each text the validator accepts the automaton accepts and the other way round; each of 100
   * random strings the automaton generates is valid. A schema refused with {@code emptyMessage}
   * must have no valid text among them.
   */
  private static void checkExact(
      JsonNode schema, List<String> texts, SplittableRandom rnd, String emptyMessage)
      throws Exception {
    ByteDfa dfa;
    try {
      dfa = ByteDfa.of(JsonSchemaCompiler.compile(schema));
    } catch (UnsupportedConstraintException e) {
      assertThat(e.getMessage()).as("%s", schema).contains(emptyMessage);
      for (String t : texts) {
        assertThat(valid(schema, t)).as("%s refused, but %s is valid", schema, t).isFalse();
      }
      return;
    }
    for (String t : texts) {
      assertThat(accepts(dfa, t)).as("%s on %s", schema, t).isEqualTo(valid(schema, t));
    }
    for (int i = 0; i < 100; i++) {
      String t = generate(dfa, rnd);
      assertThat(valid(schema, t)).as("%s generated %s", schema, t).isTrue();
    }
  }

  private static ByteDfa compiled(JsonNode schema) {
    try {
      return ByteDfa.of(JsonSchemaCompiler.compile(schema));
    } catch (UnsupportedConstraintException e) {
      return null;
    }
  }

  /** A random text of the automaton (its UTF-8 bytes decoded), stopping at random. */
  private static String generate(ByteDfa dfa, SplittableRandom rnd) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int s = dfa.start();
    while (true) {
      List<Integer> exits = new ArrayList<>();
      for (int b = 0; b < 256; b++) {
        if (dfa.next(s, b) >= 0) {
          exits.add(b);
        }
      }
      if (exits.isEmpty() || (dfa.accepting(s) && rnd.nextInt(4) == 0)) {
        return out.toString(StandardCharsets.UTF_8);
      }
      int b = exits.get(rnd.nextInt(exits.size()));
      out.write(b);
      s = dfa.next(s, b);
    }
  }

  private static boolean accepts(ByteDfa dfa, String text) {
    return dfa.matches(text.getBytes(StandardCharsets.UTF_8));
  }

  private static boolean valid(JsonNode schema, String text) throws Exception {
    return VALIDATORS.getSchema(schema).validate(JSON.readTree(text)).isEmpty();
  }
}
