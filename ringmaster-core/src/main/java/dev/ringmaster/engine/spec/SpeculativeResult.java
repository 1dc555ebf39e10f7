package dev.ringmaster.engine.spec;

import dev.ringmaster.engine.GenerationResult;

/**
 * A speculative generation's output and timings, and its acceptance.
 *
 * @param generation tokens, finish reason and timings, as plain generation reports them
 * @param stats verify steps, draft tokens and accepted tokens
 */
public record SpeculativeResult(GenerationResult generation, SpeculationStats stats) {}
