package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** A set of Unicode scalar values as sorted, disjoint, inclusive ranges (surrogates excluded). */
final class CodePointSet {
  static final int MAX = 0x10FFFF;
  private final List<int[]> ranges = new ArrayList<>();

  static CodePointSet of(int c) {
    return of(c, c);
  }

  static CodePointSet of(int lo, int hi) {
    CodePointSet s = new CodePointSet();
    s.add(lo, hi);
    return s;
  }

  void add(int lo, int hi) {
    ranges.add(new int[] {lo, hi});
    normalize();
  }

  void addAll(CodePointSet other) {
    ranges.addAll(other.ranges);
    normalize();
  }

  private void normalize() {
    ranges.sort(Comparator.comparingInt(r -> r[0]));
    List<int[]> merged = new ArrayList<>();
    for (int[] r : ranges) {
      if (!merged.isEmpty() && r[0] <= merged.getLast()[1] + 1) {
        merged.getLast()[1] = Math.max(merged.getLast()[1], r[1]);
      } else {
        merged.add(new int[] {r[0], r[1]});
      }
    }
    ranges.clear();
    ranges.addAll(merged);
  }

  /** Every scalar value not in this set. */
  CodePointSet complement() {
    CodePointSet c = new CodePointSet();
    int next = 0;
    for (int[] r : ranges) {
      if (r[0] > next) {
        c.ranges.add(new int[] {next, r[0] - 1});
      }
      next = r[1] + 1;
    }
    if (next <= MAX) {
      c.ranges.add(new int[] {next, MAX});
    }
    return c;
  }

  boolean isSingle() {
    return ranges.size() == 1 && ranges.getFirst()[0] == ranges.getFirst()[1];
  }

  int single() {
    return ranges.getFirst()[0];
  }

  /** The ranges with the surrogate block removed. */
  List<int[]> scalarRanges() {
    List<int[]> out = new ArrayList<>();
    for (int[] r : ranges) {
      if (r[1] < 0xD800 || r[0] > 0xDFFF) {
        out.add(r);
        continue;
      }
      if (r[0] < 0xD800) {
        out.add(new int[] {r[0], 0xD7FF});
      }
      if (r[1] > 0xDFFF) {
        out.add(new int[] {0xE000, r[1]});
      }
    }
    return out;
  }
}
