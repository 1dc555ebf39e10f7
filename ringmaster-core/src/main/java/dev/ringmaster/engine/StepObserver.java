package dev.ringmaster.engine;

/**
 * Sees every step of a {@link Generator} run and may choose the token fed next (teacher forcing).
 * Step 0 is the prefill's last prompt position; step {@code i > 0} is the decode step that ran on
 * output token {@code i - 1}. Output token {@code i} is what {@link #onStep} returns for step
 * {@code i}, so a run whose observer returns a reference run's output ids sees exactly that run's
 * inputs at every step, even where its own logits would have picked differently.
 */
@FunctionalInterface
public interface StepObserver {
  /** Changes nothing: every step keeps the sampled token. */
  StepObserver NONE = (step, logits, sampled) -> sampled;

  /**
   * Called once per step, after sampling and before the token is emitted.
   *
   * @param step 0 for the prefill, then one more per decode step
   * @param logits the step's logits row, {@code float[vocab]}, as the model computed it; only valid
   *     during the call (copy it to keep it) and not to be modified
   * @param sampled the token the sampler chose from {@code logits}
   * @return the token to emit and feed next: {@code sampled} to leave the run unchanged, anything
   *     else in the vocabulary to force it
   */
  int onStep(int step, float[] logits, int sampled);
}
