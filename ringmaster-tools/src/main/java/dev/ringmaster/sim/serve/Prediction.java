package dev.ringmaster.sim.serve;

import java.util.List;
import java.util.Map;

/**
 * What the simulator predicts for one configuration. Serialised as JSON with snake_case names
 * ({@code decode_tokens_per_s}, {@code step_time_ms}, {@code breakdown_ms}, {@code
 * collectives_per_step}, {@code kv_capacity_tokens}, ...).
 *
 * @param model model_type and layer count
 * @param hardware profile name
 * @param config the configuration in CLI terms
 * @param stepTimeMs one decode step (with speculative decoding: one draft+verify cycle)
 * @param perTokenMs time per generated token of one sequence
 * @param perStreamTokensPerS tokens/s of one sequence
 * @param decodeTokensPerS tokens/s of all sequences together
 * @param breakdownMs milliseconds per step per term (weights, attention, moe, collectives,
 *     launch_other)
 * @param dominant the largest term
 * @param collectivesPerStep collectives issued per step with sizes and times
 * @param kvCapacityTokens KV cache capacity in tokens
 * @param maxBatchAtContext sequences of the configured context length that fit
 * @param memory the memory plan (bytes)
 * @param prefillMs time to prefill one prompt of the configured context length
 * @param speculative speculative-decoding detail, or null
 * @param doesNotRun why this configuration cannot run at all (unsupported on this box, does not fit
 *     in memory); empty when it runs. Times are then what-if figures and are not to be printed
 * @param warnings what is a caveat or was substituted
 * @param assumptions what the prediction takes for granted
 */
public record Prediction(
    String model,
    String hardware,
    Map<String, Object> config,
    double stepTimeMs,
    double perTokenMs,
    double perStreamTokensPerS,
    double decodeTokensPerS,
    Map<String, Double> breakdownMs,
    String dominant,
    List<CollectiveCall> collectivesPerStep,
    long kvCapacityTokens,
    long maxBatchAtContext,
    MemoryPlan memory,
    double prefillMs,
    SpecDetail speculative,
    List<String> doesNotRun,
    List<String> warnings,
    List<String> assumptions) {

  /** Whether the configuration can run on this box. */
  public boolean runs() {
    return doesNotRun.isEmpty();
  }

  /**
   * Speculative decoding detail.
   *
   * @param draftMs all draft forwards of a cycle
   * @param verifyMs the verify forward over the draft tokens
   * @param draftExtendMs the draft forward over the accepted tokens
   * @param acceptLength mean tokens kept per cycle
   * @param baselineTokensPerS per-stream tokens/s of the same configuration without speculation
   * @param speedup perStreamTokensPerS / baselineTokensPerS
   */
  public record SpecDetail(
      double draftMs,
      double verifyMs,
      double draftExtendMs,
      double acceptLength,
      double baselineTokensPerS,
      double speedup) {}
}
