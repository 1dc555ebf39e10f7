package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Compiles a set of code points to the byte sequences of their UTF-8 encodings: each range is split
 * until every byte position of it is a plain byte range (the construction of RE2 and Rust's
 * utf8-ranges).
 */
final class Utf8Ranges {
  private static final int[] LENGTH_ENDS = {0x7F, 0x7FF, 0xFFFF, CodePointSet.MAX};

  private Utf8Ranges() {}

  static RegexNode of(CodePointSet set) {
    List<RegexNode> options = new ArrayList<>();
    BitSet ascii = new BitSet(256);
    for (int[] r : set.scalarRanges()) {
      split(r[0], r[1], options, ascii);
    }
    if (!ascii.isEmpty()) {
      options.addFirst(new RegexNode.ByteSet(ascii));
    }
    if (options.isEmpty()) {
      throw new UnsupportedConstraintException("a character class that matches nothing");
    }
    return options.size() == 1 ? options.getFirst() : new RegexNode.Alt(options);
  }

  private static void split(int lo, int hi, List<RegexNode> out, BitSet ascii) {
    for (int end : LENGTH_ENDS) {
      if (lo <= end && hi > end) {
        split(lo, end, out, ascii);
        split(end + 1, hi, out, ascii);
        return;
      }
    }
    if (hi <= 0x7F) {
      ascii.set(lo, hi + 1);
      return;
    }
    int n = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < n; i++) {
      int m = (1 << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          split(lo, lo | m, out, ascii);
          split((lo | m) + 1, hi, out, ascii);
          return;
        }
        if ((hi & m) != m) {
          split(lo, (hi & ~m) - 1, out, ascii);
          split(hi & ~m, hi, out, ascii);
          return;
        }
      }
    }
    byte[] a = Character.toString(lo).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] b = Character.toString(hi).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    List<RegexNode> seq = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      BitSet bytes = new BitSet(256);
      bytes.set(a[i] & 0xff, (b[i] & 0xff) + 1);
      seq.add(new RegexNode.ByteSet(bytes));
    }
    out.add(new RegexNode.Seq(seq));
  }
}
