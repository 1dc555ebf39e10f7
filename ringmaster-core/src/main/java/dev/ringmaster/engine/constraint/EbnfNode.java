package dev.ringmaster.engine.constraint;

import java.util.BitSet;
import java.util.List;

/** The syntax tree of one EBNF rule's body, over bytes: what {@link Grammar} normalises. */
sealed interface EbnfNode {
  /** One byte out of a set. */
  record Bytes(BitSet bytes) implements EbnfNode {}

  /** The parts one after another (empty: the empty string). */
  record Seq(List<EbnfNode> parts) implements EbnfNode {}

  /** Any one of the options. */
  record Alt(List<EbnfNode> options) implements EbnfNode {}

  /** {@code min} to {@code max} repetitions ({@code max} -1: unbounded). */
  record Repeat(EbnfNode node, int min, int max) implements EbnfNode {}

  /** A reference to the rule named {@code name}. */
  record Ref(String name, int position) implements EbnfNode {}

  /** The same language as a byte-level regex tree (character classes come as those). */
  static EbnfNode of(RegexNode n) {
    return switch (n) {
      case RegexNode.ByteSet(BitSet bytes) -> new Bytes(bytes);
      case RegexNode.Seq(List<RegexNode> parts) ->
          new Seq(parts.stream().map(EbnfNode::of).toList());
      case RegexNode.Alt(List<RegexNode> options) ->
          new Alt(options.stream().map(EbnfNode::of).toList());
      case RegexNode.Repeat(RegexNode node, int min, int max) -> new Repeat(of(node), min, max);
      // Grammars are built from character classes and literals, never from a JSON schema's
      // intersections: there is no automaton to meet here.
      case RegexNode.Automaton a ->
          throw new IllegalArgumentException("a compiled automaton has no EBNF form");
    };
  }
}
