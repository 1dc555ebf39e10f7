/**
 * Constrained decoding. A regex, a choice among strings or a JSON schema is compiled to a
 * byte-level DFA ({@link dev.ringmaster.engine.constraint.ByteDfa}) and bound to a tokenizer's
 * vocabulary as a {@link dev.ringmaster.engine.constraint.TokenConstraint} that gives the
 * allowed-token mask of each state; an EBNF grammar becomes a {@link
 * dev.ringmaster.engine.constraint.GrammarConstraint}, whose requests each walk an Earley chart
 * over bytes. Either is an {@link dev.ringmaster.engine.constraint.OutputConstraint}, followed per
 * request by a {@link dev.ringmaster.engine.constraint.ConstraintState} that the engine advances by
 * every generated token. Masks are applied to the logits before sampling, so every output token
 * keeps the output a prefix of a match.
 */
package dev.ringmaster.engine.constraint;
