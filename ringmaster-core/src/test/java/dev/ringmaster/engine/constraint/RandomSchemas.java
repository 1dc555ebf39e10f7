package dev.ringmaster.engine.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.SplittableRandom;

/**
 * Random JSON schemas within the compiler's subset, each with an upper bound on the bytes of any
 * compact JSON text valid against it, so a token budget of that many tokens (plus the end token)
 * always lets the output finish.
 */
final class RandomSchemas {
  /** A schema and the most bytes a value valid against it can take. */
  record Sample(JsonNode schema, int maxBytes) {}

  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  // Worst cases of the compiler's number grammars: sign, 16 digits, fraction, exponent.
  private static final int INTEGER_BYTES = 17;
  private static final int NUMBER_BYTES = 17 + 16 + 5;
  // A string character is at most a six-byte \\uXXXX escape.
  private static final int CHAR_BYTES = 6;
  private static final String[] WORDS = {"id", "name", "tags", "ok", "n", "x", "value", "kind"};

  private final SplittableRandom rnd;

  RandomSchemas(long seed) {
    this.rnd = new SplittableRandom(seed);
  }

  /** A schema nested at most {@code depth} levels of objects, arrays and anyOf. */
  Sample next(int depth) {
    int kind = rnd.nextInt(depth > 0 ? 11 : 8);
    ObjectNode s = F.objectNode();
    switch (kind) {
      case 0 -> {
        s.put("type", "integer");
        return new Sample(s, INTEGER_BYTES);
      }
      case 1 -> {
        s.put("type", "number");
        return new Sample(s, NUMBER_BYTES);
      }
      case 2 -> {
        s.put("type", rnd.nextBoolean() ? "boolean" : "null");
        return new Sample(s, 5);
      }
      case 3 -> {
        s.put("type", "string");
        int max = rnd.nextInt(5);
        int min = rnd.nextInt(max + 1);
        s.put("maxLength", max);
        if (min > 0) {
          s.put("minLength", min);
        }
        return new Sample(s, 2 + CHAR_BYTES * max);
      }
      case 4 -> {
        RandomRegexes.Sample p = new RandomRegexes(rnd.nextLong()).next(true);
        s.put("type", "string");
        s.put("pattern", p.pattern());
        return new Sample(s, 2 + p.maxBytes());
      }
      case 5 -> {
        ArrayNode e = s.putArray("enum");
        int most = 0;
        for (int i = 0, n = 1 + rnd.nextInt(4); i < n; i++) {
          JsonNode v = literal();
          e.add(v);
          most = Math.max(most, v.toString().length());
        }
        return new Sample(s, most);
      }
      case 6, 7 -> {
        JsonNode v = literal();
        s.set("const", v);
        return new Sample(s, v.toString().length());
      }
      case 8 -> {
        return object(depth);
      }
      case 9 -> {
        Sample item = next(depth - 1);
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
      default -> {
        ArrayNode any = s.putArray("anyOf");
        int most = 0;
        for (int i = 0, n = 2 + rnd.nextInt(2); i < n; i++) {
          Sample o = next(depth - 1);
          any.add(o.schema());
          most = Math.max(most, o.maxBytes());
        }
        return new Sample(s, most);
      }
    }
  }

  private Sample object(int depth) {
    ObjectNode s = F.objectNode();
    s.put("type", "object");
    ObjectNode props = s.putObject("properties");
    ArrayNode required = F.arrayNode();
    int bytes = 4; // "{", " ", " ", "}"
    for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) {
      String key = WORDS[rnd.nextInt(WORDS.length)] + i;
      Sample v = next(depth - 1);
      props.set(key, v.schema());
      if (rnd.nextInt(3) > 0) {
        required.add(key);
      }
      // "key" ":" value ", " with optional spaces.
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

  private JsonNode literal() {
    return switch (rnd.nextInt(5)) {
      case 0 -> F.numberNode(rnd.nextInt(-50, 1000));
      case 1 -> F.booleanNode(rnd.nextBoolean());
      case 2 -> F.nullNode();
      case 3 -> F.textNode(WORDS[rnd.nextInt(WORDS.length)] + (rnd.nextBoolean() ? " é" : "\""));
      default -> F.textNode(WORDS[rnd.nextInt(WORDS.length)]);
    };
  }
}
