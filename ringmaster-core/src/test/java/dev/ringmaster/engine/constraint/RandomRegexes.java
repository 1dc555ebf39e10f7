package dev.ringmaster.engine.constraint;

import java.util.SplittableRandom;

/**
 * Random regexes from a small grammar (literals, classes, groups, alternation, {@code ? * +} and
 * bounded repeats), each with the most bytes a match can take when it is bounded.
 */
final class RandomRegexes {
  /**
   * A pattern and the most UTF-8 bytes of a match, or {@link Integer#MAX_VALUE} when it uses an
   * unbounded repeat.
   */
  record Sample(String pattern, int maxBytes) {}

  private static final String[] LITERALS = {"a", "b", "z", "0", "7", "-", "_", "\\.", "é", "\\+"};
  private static final String[] CLASSES = {"[a-z]", "[0-9]", "[abc]", "[A-Fa-f0-9]", "[x-z_]"};
  private static final int UNBOUNDED = Integer.MAX_VALUE;

  private final SplittableRandom rnd;
  private boolean jsonSafe;

  RandomRegexes(long seed) {
    this.rnd = new SplittableRandom(seed);
  }

  /**
   * A pattern; {@code jsonStringSafe} keeps it bounded and free of characters a JSON string would
   * have to escape (for a schema's {@code pattern}).
   */
  Sample next(boolean jsonStringSafe) {
    this.jsonSafe = jsonStringSafe;
    return alternation(2);
  }

  private Sample alternation(int depth) {
    int n = rnd.nextInt(4) == 0 ? 2 + rnd.nextInt(2) : 1;
    StringBuilder sb = new StringBuilder();
    int most = 0;
    for (int i = 0; i < n; i++) {
      Sample s = sequence(depth);
      sb.append(i > 0 ? "|" : "").append(s.pattern());
      most = Math.max(most, s.maxBytes());
    }
    return new Sample(sb.toString(), most);
  }

  private Sample sequence(int depth) {
    StringBuilder sb = new StringBuilder();
    long bytes = 0;
    for (int i = 0, n = 1 + rnd.nextInt(4); i < n; i++) {
      Sample a = quantified(depth);
      sb.append(a.pattern());
      bytes += a.maxBytes();
    }
    return new Sample(sb.toString(), (int) Math.min(UNBOUNDED, bytes));
  }

  private Sample quantified(int depth) {
    Sample a = atom(depth);
    return switch (rnd.nextInt(8)) {
      case 0 -> new Sample(a.pattern() + "?", a.maxBytes());
      case 1 -> jsonSafe ? a : new Sample(a.pattern() + "*", UNBOUNDED);
      case 2 -> jsonSafe ? a : new Sample(a.pattern() + "+", UNBOUNDED);
      case 3 -> {
        int lo = rnd.nextInt(3);
        int hi = lo + rnd.nextInt(3);
        yield new Sample(a.pattern() + "{" + lo + "," + hi + "}", times(a.maxBytes(), hi));
      }
      case 4 -> {
        int k = 1 + rnd.nextInt(3);
        yield new Sample(a.pattern() + "{" + k + "}", times(a.maxBytes(), k));
      }
      default -> a;
    };
  }

  private static int times(int bytes, int k) {
    return bytes == UNBOUNDED ? UNBOUNDED : bytes * k;
  }

  private Sample atom(int depth) {
    int r = rnd.nextInt(depth > 0 ? 10 : 8);
    if (r < 4) {
      String lit = LITERALS[rnd.nextInt(LITERALS.length)];
      return new Sample(lit, lit.equals("é") ? 2 : 1);
    }
    if (r < 7) {
      return new Sample(CLASSES[rnd.nextInt(CLASSES.length)], 1);
    }
    if (r == 7) {
      // Everything but a few letters: any code point (up to four bytes) a JSON string need not
      // escape when inside a pattern.
      return new Sample(jsonSafe ? "[^a-c\"\\\\\\x00-\\x1f]" : "[^a-c]", 4);
    }
    Sample inner = alternation(depth - 1);
    return new Sample("(" + inner.pattern() + ")", inner.maxBytes());
  }
}
