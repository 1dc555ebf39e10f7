package dev.ringmaster.engine.constraint;

import java.util.BitSet;
import java.util.List;

/** The syntax tree of a byte-level regular expression: what {@link ByteDfa} compiles. */
sealed interface RegexNode {
  /** One byte out of a set. */
  record ByteSet(BitSet bytes) implements RegexNode {}

  /** The parts one after another (empty: the empty string). */
  record Seq(List<RegexNode> parts) implements RegexNode {}

  /** Any one of the options. */
  record Alt(List<RegexNode> options) implements RegexNode {}

  /** {@code min} to {@code max} repetitions ({@code max} -1: unbounded). */
  record Repeat(RegexNode node, int min, int max) implements RegexNode {}

  /**
   * The language of a compiled automaton: what an intersection, which the tree cannot express,
   * comes as.
   */
  record Automaton(ByteDfa dfa) implements RegexNode {}

  /** The empty string. */
  RegexNode EMPTY = new Seq(List.of());

  /** One byte. */
  static RegexNode ofByte(int b) {
    BitSet s = new BitSet(256);
    s.set(b & 0xff);
    return new ByteSet(s);
  }

  /** The UTF-8 bytes of a literal string. */
  static RegexNode literal(byte[] bytes) {
    RegexNode[] parts = new RegexNode[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      parts[i] = ofByte(bytes[i]);
    }
    return new Seq(List.of(parts));
  }

  /**
   * This expression without the bytes a JSON string cannot hold unescaped ({@code "}, {@code \} and
   * the control characters below 0x20): a schema {@code pattern} between a string's quotes then
   * matches only strings it can write as they are. UTF-8 multi-byte sequences never contain these
   * bytes, so only the ASCII characters are taken out.
   */
  static RegexNode jsonStringSafe(RegexNode n) {
    return switch (n) {
      case ByteSet(BitSet bytes) -> {
        BitSet b = (BitSet) bytes.clone();
        b.clear(0, 0x20);
        b.clear('"');
        b.clear('\\');
        yield new ByteSet(b);
      }
      case Seq(List<RegexNode> parts) ->
          new Seq(parts.stream().map(RegexNode::jsonStringSafe).toList());
      case Alt(List<RegexNode> options) ->
          new Alt(options.stream().map(RegexNode::jsonStringSafe).toList());
      case Repeat(RegexNode node, int min, int max) -> new Repeat(jsonStringSafe(node), min, max);
      case Automaton(ByteDfa dfa) -> new Automaton(dfa.restrictedTo(jsonStringSafeBytes()));
    };
  }

  /** The bytes a JSON string can hold unescaped. */
  private static BitSet jsonStringSafeBytes() {
    BitSet b = new BitSet(256);
    b.set(0x20, 256);
    b.clear('"');
    b.clear('\\');
    return b;
  }
}
