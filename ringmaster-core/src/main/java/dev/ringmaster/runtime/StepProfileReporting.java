package dev.ringmaster.runtime;

import java.util.Map;

/**
 * A model that can time one step by op group (the per-kernel breakdown of {@code bench one-batch
 * --profile}). Profiling is switched on before the model loads; each profiled step is recorded
 * under a name such as {@code "decode bs=8"} or {@code "prefill chunk of 512 tokens"}.
 */
public interface StepProfileReporting {
  /**
   * The profiles recorded since the last call, in the order they were taken: step name to
   * milliseconds per op group (GPU time, in launch order). Empty when profiling is off. After a
   * call, the next step of each shape is profiled again.
   */
  Map<String, Map<String, Double>> takeStepProfiles();

  /**
   * Profiles verify passes (steps with several tokens of one sequence) from now on, the first of
   * each shape, recorded under a name that ends with {@code label} (what the passes run over, such
   * as {@code "repeating text"}); {@code null} stops it. Models that profile no verify passes
   * ignore it.
   */
  default void profileVerifyPasses(String label) {}
}
