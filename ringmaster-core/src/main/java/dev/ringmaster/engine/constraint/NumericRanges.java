package dev.ringmaster.engine.constraint;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Exact expressions for bounded JSON integers and numbers, written digit by digit: a value matches
 * exactly when it lies within the bounds, compared as decimals. Values are written without an
 * exponent and without leading zeros; zero may be written {@code -0} (it is 0, as a validator reads
 * it) wherever 0 is in range. Integers take at most {@value #DEFAULT_DIGITS} digits on a side no
 * bound limits, and never leave the 64-bit range. A number's integer part takes at most {@value
 * #DEFAULT_DIGITS} digits (or as many as a bound has) on an open side, and a number with a fraction
 * at most {@value #PRECISION} significant digits, so a reader that parses it as a double compares
 * it with the bound exactly as a decimal.
 */
final class NumericRanges {
  /** Digits of a value's integer part on a side no bound limits. */
  static final int DEFAULT_DIGITS = 16;

  /**
   * Most digits of a number with a fraction (integer part and fraction together): any two such
   * decimals are distinct doubles, and each prints back as itself.
   */
  static final int PRECISION = 15;

  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);
  private static final BigDecimal OPEN_INTEGER =
      new BigDecimal(BigInteger.TEN.pow(DEFAULT_DIGITS).subtract(BigInteger.ONE));

  /** A bound on a value: its value and whether the value itself is excluded. */
  record Bound(BigDecimal value, boolean exclusive) {}

  /** The digit strings after a number's point: whether none may be written, and those that may. */
  private record Fraction(boolean none, RegexNode digits) {}

  private NumericRanges() {}

  /**
   * The integers within the bounds (either may be null: open on that side), or null when none is.
   */
  static RegexNode integer(Bound lower, Bound upper) {
    BigDecimal longMin = new BigDecimal(LONG_MIN);
    BigDecimal longMax = new BigDecimal(LONG_MAX);
    if (lower == null) {
      boolean far = upper != null && upper.value().compareTo(OPEN_INTEGER.negate()) < 0;
      lower = new Bound(far ? longMin : OPEN_INTEGER.negate(), false);
    }
    if (upper == null) {
      boolean far = lower.value().compareTo(OPEN_INTEGER) > 0;
      upper = new Bound(far ? longMax : OPEN_INTEGER, false);
    }
    if (lower.value().compareTo(longMin) < 0) {
      lower = new Bound(longMin, false);
    }
    if (upper.value().compareTo(longMax) > 0) {
      upper = new Bound(longMax, false);
    }
    return signed(lower, upper, false);
  }

  /** The numbers within the bounds (either may be null: open on that side), or null if none is. */
  static RegexNode number(Bound lower, Bound upper) {
    int digits = Math.max(DEFAULT_DIGITS, Math.max(intDigits(lower), intDigits(upper)));
    Bound limit = new Bound(BigDecimal.TEN.pow(digits), true);
    return signed(
        lower == null ? new Bound(limit.value().negate(), true) : lower,
        upper == null ? limit : upper,
        true);
  }

  private static int intDigits(Bound b) {
    return b == null ? 0 : floor(b.value().abs()).toString().length();
  }

  /** Values in [lower, upper]: the non-negative ones as they are, the negative ones after '-'. */
  private static RegexNode signed(Bound lower, Bound upper, boolean fractions) {
    Bound zero = new Bound(BigDecimal.ZERO, false);
    List<RegexNode> options = new ArrayList<>();
    RegexNode plus = magnitudes(lower.value().signum() < 0 ? zero : lower, upper, fractions);
    if (plus != null) {
      options.add(plus);
    }
    Bound negLower =
        upper.value().signum() > 0 ? zero : new Bound(upper.value().negate(), upper.exclusive());
    Bound negUpper = new Bound(lower.value().negate(), lower.exclusive());
    RegexNode minus = magnitudes(negLower, negUpper, fractions);
    if (minus != null) {
      options.add(seq(RegexNode.ofByte('-'), minus));
    }
    return options.isEmpty() ? null : alt(options);
  }

  /** Non-negative values in [lo, hi] ({@code lo} at least 0), or null when none is. */
  private static RegexNode magnitudes(Bound lo, Bound hi, boolean fractions) {
    int c = lo.value().compareTo(hi.value());
    if (c > 0 || (c == 0 && (lo.exclusive() || hi.exclusive()))) {
      return null;
    }
    BigInteger loInt = floor(lo.value());
    BigInteger hiInt = floor(hi.value());
    String loFrac = fractionDigits(lo.value());
    String hiFrac = fractionDigits(hi.value());
    List<RegexNode> options = new ArrayList<>();
    if (loInt.equals(hiInt)) {
      int k = budget(loInt, fractions);
      add(options, literal(loInt), between(loFrac, lo.exclusive(), hiFrac, hi.exclusive(), k));
      return options.isEmpty() ? null : alt(options);
    }
    add(options, literal(loInt), atLeast(loFrac, lo.exclusive(), budget(loInt, fractions)));
    BigInteger from = loInt.add(BigInteger.ONE);
    BigInteger to = hiInt.subtract(BigInteger.ONE);
    for (int n = from.toString().length(); from.compareTo(to) <= 0; n++) {
      BigInteger top = BigInteger.TEN.pow(n).subtract(BigInteger.ONE).min(to);
      RegexNode ints = sameLength(from.toString(), top.toString(), 0);
      add(options, ints, anyFraction(fractions ? Math.max(0, PRECISION - n) : 0));
      from = top.add(BigInteger.ONE);
    }
    add(options, literal(hiInt), atMost(hiFrac, hi.exclusive(), budget(hiInt, fractions)));
    return options.isEmpty() ? null : alt(options);
  }

  /** Fraction digits a number with this integer part may have. */
  private static int budget(BigInteger intPart, boolean fractions) {
    if (!fractions) {
      return 0;
    }
    return intPart.signum() == 0 ? PRECISION : Math.max(0, PRECISION - intPart.toString().length());
  }

  /** Adds integer part + fraction, when some fraction (or none) may follow. */
  private static void add(List<RegexNode> options, RegexNode intPart, Fraction f) {
    List<RegexNode> tails = new ArrayList<>();
    if (f.none()) {
      tails.add(RegexNode.EMPTY);
    }
    if (f.digits() != null) {
      tails.add(seq(RegexNode.ofByte('.'), f.digits()));
    }
    if (!tails.isEmpty()) {
      options.add(seq(intPart, alt(tails)));
    }
  }

  private static BigInteger floor(BigDecimal v) {
    return v.setScale(0, RoundingMode.FLOOR).toBigIntegerExact();
  }

  /** The digits after the point of a non-negative value, trailing zeros dropped ("" for none). */
  private static String fractionDigits(BigDecimal v) {
    BigDecimal f = v.subtract(new BigDecimal(floor(v)));
    if (f.signum() == 0) {
      return "";
    }
    return f.stripTrailingZeros().toPlainString().substring(2);
  }

  private static RegexNode literal(BigInteger v) {
    return RegexNode.literal(v.toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII));
  }

  // Fractions compare digit by digit, a missing digit reading as 0: "5" is the fraction ".5" and
  // "" the fraction 0. Each function below gives the digit strings of at most k digits whose
  // fraction is on the asked side of f ("" included when it qualifies).

  /** Fractions at least (above, when exclusive) {@code f}. */
  private static Fraction atLeast(String f, boolean exclusive, int k) {
    boolean none = f.isEmpty() && !exclusive;
    if (k == 0) {
      return new Fraction(none, null);
    }
    int c = head(f);
    List<RegexNode> options = new ArrayList<>();
    if (c < 9) {
      options.add(seq(digits(c + 1, 9), anyDigits(k - 1)));
    }
    addHead(options, c, atLeast(tail(f), exclusive, k - 1));
    return new Fraction(none, options.isEmpty() ? null : alt(options));
  }

  /** Fractions at most (below, when exclusive) {@code f}. */
  private static Fraction atMost(String f, boolean exclusive, int k) {
    boolean none = !f.isEmpty() || !exclusive;
    if (k == 0) {
      return new Fraction(none, null);
    }
    int c = head(f);
    List<RegexNode> options = new ArrayList<>();
    if (c > 0) {
      options.add(seq(digits(0, c - 1), anyDigits(k - 1)));
    }
    addHead(options, c, atMost(tail(f), exclusive, k - 1));
    return new Fraction(none, options.isEmpty() ? null : alt(options));
  }

  /** Fractions between {@code lo} and {@code hi} (lo not above hi). */
  private static Fraction between(String lo, boolean loEx, String hi, boolean hiEx, int k) {
    boolean none = lo.isEmpty() && !loEx && (!hi.isEmpty() || !hiEx);
    if (k == 0) {
      return new Fraction(none, null);
    }
    int a = head(lo);
    int b = head(hi);
    List<RegexNode> options = new ArrayList<>();
    if (a == b) {
      addHead(options, a, between(tail(lo), loEx, tail(hi), hiEx, k - 1));
    } else {
      addHead(options, a, atLeast(tail(lo), loEx, k - 1));
      if (a + 1 <= b - 1) {
        options.add(seq(digits(a + 1, b - 1), anyDigits(k - 1)));
      }
      addHead(options, b, atMost(tail(hi), hiEx, k - 1));
    }
    return new Fraction(none, options.isEmpty() ? null : alt(options));
  }

  private static Fraction anyFraction(int k) {
    return new Fraction(true, k == 0 ? null : new RegexNode.Repeat(digits(0, 9), 1, k));
  }

  /** Adds digit {@code c} followed by any of {@code rest} (the empty string too, if it is). */
  private static void addHead(List<RegexNode> options, int c, Fraction rest) {
    List<RegexNode> tails = new ArrayList<>();
    if (rest.none()) {
      tails.add(RegexNode.EMPTY);
    }
    if (rest.digits() != null) {
      tails.add(rest.digits());
    }
    if (!tails.isEmpty()) {
      options.add(seq(digits(c, c), alt(tails)));
    }
  }

  private static int head(String f) {
    return f.isEmpty() ? 0 : f.charAt(0) - '0';
  }

  private static String tail(String f) {
    return f.isEmpty() ? "" : f.substring(1);
  }

  /** Digit strings of x's length from x to y (same length, x not above y), from index i on. */
  private static RegexNode sameLength(String x, String y, int i) {
    if (i == x.length()) {
      return RegexNode.EMPTY;
    }
    int a = x.charAt(i) - '0';
    int b = y.charAt(i) - '0';
    if (a == b) {
      return seq(digits(a, a), sameLength(x, y, i + 1));
    }
    int rest = x.length() - i - 1;
    List<RegexNode> options = new ArrayList<>();
    options.add(seq(digits(a, a), notBelow(x, i + 1)));
    if (a + 1 <= b - 1) {
      options.add(seq(digits(a + 1, b - 1), exactly(rest)));
    }
    options.add(seq(digits(b, b), notAbove(y, i + 1)));
    return alt(options);
  }

  /** Digit strings as long as x's tail from i that are not below it. */
  private static RegexNode notBelow(String x, int i) {
    if (i == x.length()) {
      return RegexNode.EMPTY;
    }
    int a = x.charAt(i) - '0';
    RegexNode same = seq(digits(a, a), notBelow(x, i + 1));
    return a == 9 ? same : alt(List.of(same, seq(digits(a + 1, 9), exactly(x.length() - i - 1))));
  }

  /** Digit strings as long as y's tail from i that are not above it. */
  private static RegexNode notAbove(String y, int i) {
    if (i == y.length()) {
      return RegexNode.EMPTY;
    }
    int b = y.charAt(i) - '0';
    RegexNode same = seq(digits(b, b), notAbove(y, i + 1));
    return b == 0 ? same : alt(List.of(same, seq(digits(0, b - 1), exactly(y.length() - i - 1))));
  }

  private static RegexNode exactly(int n) {
    return new RegexNode.Repeat(digits(0, 9), n, n);
  }

  private static RegexNode anyDigits(int max) {
    return new RegexNode.Repeat(digits(0, 9), 0, max);
  }

  private static RegexNode digits(int from, int to) {
    BitSet s = new BitSet(256);
    s.set('0' + from, '0' + to + 1);
    return new RegexNode.ByteSet(s);
  }

  private static RegexNode seq(RegexNode... parts) {
    return new RegexNode.Seq(List.of(parts));
  }

  private static RegexNode alt(List<RegexNode> options) {
    return options.size() == 1 ? options.getFirst() : new RegexNode.Alt(options);
  }
}
