package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Integer and number bounds ({@code minimum}, {@code maximum}, {@code exclusiveMinimum}, {@code
 * exclusiveMaximum}) compile exactly: on random bounds, every string the automaton generates is
 * valid by networknt json-schema-validator, and every value the validator accepts, sampled at and
 * around each bound, at zero and at random, is accepted by the automaton when the grammar can write
 * it (a plain decimal: integers of at most 16 digits on an open side, numbers with a fraction of at
 * most 15 digits).
 */
class NumericBoundsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SchemaRegistry VALIDATORS =
      SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
  private static final BigInteger OPEN = BigInteger.TEN.pow(16).subtract(BigInteger.ONE);
  private static final String[] LOWER = {"minimum", "exclusiveMinimum"};
  private static final String[] UPPER = {"maximum", "exclusiveMaximum"};

  @Test
  void integerBoundsAreExact() throws Exception {
    SplittableRandom rnd = new SplittableRandom(26);
    for (int i = 0; i < 150; i++) {
      ObjectNode schema = JSON.createObjectNode().put("type", "integer");
      boolean both = rnd.nextInt(3) > 0;
      boolean lowerSide = both || rnd.nextBoolean();
      List<BigInteger> bounds = new ArrayList<>();
      for (int side = 0; side < 2; side++) {
        if (!both && (side == 0) != lowerSide) {
          continue;
        }
        String k = (side == 0 ? LOWER : UPPER)[rnd.nextInt(2)];
        BigDecimal b = integerBound(rnd, both);
        // Integral bounds mostly; now and then a fractional one (an integer bound may be 2.5).
        if (rnd.nextInt(6) == 0) {
          b = b.add(new BigDecimal("0.5"));
        }
        schema.put(k, b);
      }
      // As a request carries it: parsed from text (a fractional bound becomes a double).
      JsonNode parsed = JSON.readTree(schema.toString());
      for (BigDecimal b : bounds(parsed)) {
        bounds.add(b.toBigInteger());
      }
      Set<BigInteger> candidates = new LinkedHashSet<>(List.of(BigInteger.ZERO, BigInteger.ONE));
      for (BigInteger b : bounds) {
        for (int d = -2; d <= 2; d++) {
          candidates.add(b.add(BigInteger.valueOf(d)));
        }
      }
      BigInteger lo = both ? BigInteger.valueOf(Long.MIN_VALUE) : OPEN.negate();
      BigInteger hi = both ? BigInteger.valueOf(Long.MAX_VALUE) : OPEN;
      for (int j = 0; j < 20; j++) {
        candidates.add(BigInteger.valueOf(rnd.nextLong(-100_000, 100_000)));
        candidates.add(BigInteger.valueOf(rnd.nextLong()));
      }
      List<String> texts = new ArrayList<>(List.of("-0"));
      for (BigInteger c : candidates) {
        if (c.compareTo(lo) >= 0 && c.compareTo(hi) <= 0) {
          texts.add(c.toString());
        }
      }
      checkExact(parsed, texts, rnd);
    }
  }

  @Test
  void numberBoundsAreExact() throws Exception {
    SplittableRandom rnd = new SplittableRandom(27);
    for (int i = 0; i < 150; i++) {
      ObjectNode schema = JSON.createObjectNode().put("type", "number");
      boolean both = rnd.nextInt(3) > 0;
      boolean lowerSide = both || rnd.nextBoolean();
      for (int side = 0; side < 2; side++) {
        if (!both && (side == 0) != lowerSide) {
          continue;
        }
        String k = (side == 0 ? LOWER : UPPER)[rnd.nextInt(2)];
        schema.put(k, numberBound(rnd));
      }
      JsonNode parsed = JSON.readTree(schema.toString());
      List<BigDecimal> bounds = bounds(parsed);
      Set<BigDecimal> candidates = new LinkedHashSet<>();
      candidates.add(BigDecimal.ZERO);
      for (BigDecimal b : bounds) {
        // The bound and its closest neighbours at every scale the grammar can write.
        for (int scale = 0; scale <= 15; scale++) {
          BigDecimal step = BigDecimal.ONE.movePointLeft(scale);
          candidates.add(b.add(step));
          candidates.add(b.subtract(step));
        }
        candidates.add(b);
      }
      for (int j = 0; j < 30; j++) {
        candidates.add(BigDecimal.valueOf(rnd.nextLong(-2_000_000, 2_000_000), rnd.nextInt(5)));
        candidates.add(BigDecimal.valueOf(rnd.nextLong(), rnd.nextInt(4)));
      }
      List<String> texts = new ArrayList<>(List.of("-0", "-0.0", "0.0", "0.000"));
      for (BigDecimal c : candidates) {
        String t = c.toPlainString();
        if (writable(t)) {
          texts.add(t);
        }
      }
      checkExact(parsed, texts, rnd);
    }
  }

  private static List<BigDecimal> bounds(JsonNode schema) {
    List<BigDecimal> out = new ArrayList<>();
    for (String k : List.of(LOWER[0], LOWER[1], UPPER[0], UPPER[1])) {
      if (schema.has(k)) {
        out.add(new BigDecimal(schema.get(k).asText()));
      }
    }
    return out;
  }

  @Test
  void sixtyFourBitExtremesAndZero() throws Exception {
    ByteDfa full =
        dfa(
            "{\"type\": \"integer\", \"minimum\": "
                + Long.MIN_VALUE
                + ", \"maximum\": "
                + Long.MAX_VALUE
                + "}");
    assertThat(accepts(full, Long.toString(Long.MIN_VALUE))).isTrue();
    assertThat(accepts(full, Long.toString(Long.MAX_VALUE))).isTrue();
    assertThat(accepts(full, "9223372036854775808")).isFalse();
    assertThat(accepts(full, "-9223372036854775809")).isFalse();
    assertThat(accepts(full, "007")).isFalse();
    ByteDfa positive = dfa("{\"type\": \"integer\", \"exclusiveMinimum\": 0}");
    assertThat(accepts(positive, "0")).isFalse();
    assertThat(accepts(positive, "-0")).isFalse();
    assertThat(accepts(positive, "1")).isTrue();
    assertThat(accepts(positive, "9999999999999999")).isTrue();
    ByteDfa far = dfa("{\"type\": \"integer\", \"minimum\": 1e18}");
    assertThat(accepts(far, "1000000000000000000")).isTrue();
    assertThat(accepts(far, Long.toString(Long.MAX_VALUE))).isTrue();
    assertThat(accepts(far, "9223372036854775808")).isFalse();
    ByteDfa nonPositive = dfa("{\"type\": \"number\", \"maximum\": 0}");
    assertThat(accepts(nonPositive, "-0.0")).isTrue();
    assertThat(accepts(nonPositive, "0")).isTrue();
    assertThat(accepts(nonPositive, "0.0001")).isFalse();
    assertThat(accepts(nonPositive, "-1e3")).isFalse();
  }

  /** The grammar writes a plain decimal of at most 16 integer digits, 15 digits with a fraction. */
  private static boolean writable(String t) {
    String digits = t.startsWith("-") ? t.substring(1) : t;
    int point = digits.indexOf('.');
    if (point < 0) {
      return digits.length() <= 16;
    }
    String intPart = digits.substring(0, point);
    int fraction = digits.length() - point - 1;
    return fraction <= (intPart.equals("0") ? 15 : 15 - intPart.length());
  }

  private static BigDecimal integerBound(SplittableRandom rnd, boolean both) {
    return switch (rnd.nextInt(5)) {
      case 0 -> BigDecimal.valueOf(rnd.nextInt(-3, 4));
      case 1 -> BigDecimal.valueOf(rnd.nextLong(-100_000, 100_000));
      case 2 -> BigDecimal.valueOf(rnd.nextLong(-OPEN.longValue() / 10, OPEN.longValue() / 10));
      case 3 ->
          both
              ? BigDecimal.valueOf(rnd.nextBoolean() ? Long.MAX_VALUE : Long.MIN_VALUE)
              : BigDecimal.valueOf(rnd.nextInt(-9, 10)).movePointRight(rnd.nextInt(15));
      default -> BigDecimal.valueOf(rnd.nextBoolean() ? rnd.nextLong() : rnd.nextInt());
    };
  }

  private static BigDecimal numberBound(SplittableRandom rnd) {
    return switch (rnd.nextInt(4)) {
      case 0 -> BigDecimal.valueOf(rnd.nextInt(-3, 4));
      case 1 -> BigDecimal.valueOf(rnd.nextLong(-100_000, 100_000), rnd.nextInt(5));
      case 2 -> BigDecimal.valueOf(rnd.nextLong(-999_999_999_999L, 999_999_999_999L), 2);
      default -> BigDecimal.valueOf(rnd.nextInt(-9999, 10_000), 4 + rnd.nextInt(6));
    };
  }

  /**
   * Each text the validator accepts the automaton accepts and the other way round; each of 100
   * random strings the automaton generates is valid.
   */
  private static void checkExact(JsonNode schema, List<String> texts, SplittableRandom rnd)
      throws Exception {
    ByteDfa dfa;
    try {
      dfa = ByteDfa.of(JsonSchemaCompiler.compile(schema));
    } catch (UnsupportedConstraintException e) {
      // Refused only when no value is in range: then no text may validate.
      assertThat(e.getMessage()).as("%s", schema).containsPattern(": no (integer|number) ");
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

  /** A random string of the automaton: a random live byte at each step, stopping at random. */
  static String generate(ByteDfa dfa, SplittableRandom rnd) {
    StringBuilder out = new StringBuilder();
    int s = dfa.start();
    while (true) {
      List<Integer> exits = new ArrayList<>();
      for (int b = 0; b < 256; b++) {
        if (dfa.next(s, b) >= 0) {
          exits.add(b);
        }
      }
      if (exits.isEmpty() || (dfa.accepting(s) && rnd.nextInt(4) == 0)) {
        return out.toString();
      }
      int b = exits.get(rnd.nextInt(exits.size()));
      out.append((char) b);
      s = dfa.next(s, b);
    }
  }

  private static boolean accepts(ByteDfa dfa, String text) {
    return dfa.matches(text.getBytes(StandardCharsets.UTF_8));
  }

  private static ByteDfa dfa(String schema) throws Exception {
    return ByteDfa.of(JsonSchemaCompiler.compile(JSON.readTree(schema)));
  }

  private static boolean valid(JsonNode schemaNode, String text) throws Exception {
    Schema schema = VALIDATORS.getSchema(schemaNode);
    return schema.validate(JSON.readTree(text)).isEmpty();
  }
}
