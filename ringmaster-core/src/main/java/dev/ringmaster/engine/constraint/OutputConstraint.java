package dev.ringmaster.engine.constraint;

/**
 * A compiled output constraint bound to a vocabulary, shared by every request that asks for it: a
 * regular one ({@link TokenConstraint}, a DFA) or a context-free grammar ({@link
 * GrammarConstraint}). Thread-safe.
 */
public sealed interface OutputConstraint permits TokenConstraint, GrammarConstraint {
  /** The vocabulary the masks are over. */
  TokenVocabulary vocabulary();

  /** A fresh per-request state at the start of the constraint. */
  ConstraintState newState();
}
