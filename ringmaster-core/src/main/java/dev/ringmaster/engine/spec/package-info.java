/**
 * Speculative decoding for one sequence: a {@link dev.ringmaster.engine.spec.Drafter} proposes a
 * few tokens cheaply ({@link dev.ringmaster.engine.spec.NgramDrafter} from the context itself,
 * {@link dev.ringmaster.engine.spec.ModelDrafter} from a small draft model), the target model
 * checks them all in one forward pass, and {@link dev.ringmaster.engine.spec.DraftVerifier} keeps
 * the longest prefix the target agrees with plus one token of the target's own. Greedy output is
 * identical to decoding without speculation; sampled output follows the same distribution
 * (rejection sampling). {@link dev.ringmaster.engine.spec.SpeculativeGenerator} runs the loop and
 * rolls both KV caches back to the accepted length. In the batch engine, {@link
 * dev.ringmaster.engine.spec.ServingSpeculation} configures it and {@link
 * dev.ringmaster.engine.spec.SpeculationController} decides each step whether drafting pays, from a
 * {@link dev.ringmaster.engine.spec.SpeculationCostModel} and the acceptance seen so far.
 */
package dev.ringmaster.engine.spec;
