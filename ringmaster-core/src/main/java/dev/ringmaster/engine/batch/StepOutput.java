package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.sampling.SampledTokens;

/**
 * A forward's result: the sampled tokens of the rows that sample plainly; for a step with drafts,
 * the logits of every requested row, or where every draft is verified by argmax alone the argmax of
 * every requested row (each null otherwise); the final hidden states where a draft needs them (null
 * otherwise).
 */
record StepOutput(SampledTokens sampled, float[] logits, float[] hidden, int[] argmax) {
  StepOutput(SampledTokens sampled, float[] logits, float[] hidden) {
    this(sampled, logits, hidden, null);
  }

  StepOutput(SampledTokens sampled, float[] logits) {
    this(sampled, logits, null, null);
  }
}
