package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.sampling.SampledTokens;

/**
 * A forward's result: the sampled tokens of the rows that sample plainly and, for a step with
 * drafts, the logits of every requested row (null otherwise); the final hidden states where a draft
 * needs them (null otherwise).
 */
record StepOutput(SampledTokens sampled, float[] logits, float[] hidden) {
  StepOutput(SampledTokens sampled, float[] logits) {
    this(sampled, logits, null);
  }
}
