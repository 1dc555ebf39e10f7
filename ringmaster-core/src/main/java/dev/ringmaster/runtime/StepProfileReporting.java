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
   * milliseconds per op group (GPU time, in launch order). Empty when profiling is off.
   */
  Map<String, Map<String, Double>> takeStepProfiles();
}
