package dev.ringmaster.engine;

/**
 * What one generation produced and how fast.
 *
 * @param promptIds the prompt tokens
 * @param outputIds generated tokens (a stop token, if any, included)
 * @param finishReason "stop" (end-of-sequence or stop token) or "length"
 * @param prefillMs time of the prompt forward pass in milliseconds
 * @param decodeMs time of the decode steps in milliseconds
 */
public record GenerationResult(
    int[] promptIds, int[] outputIds, String finishReason, double prefillMs, double decodeMs) {

  /** Decode throughput: tokens after the first per second (the first comes from prefill). */
  public double decodeTokensPerSecond() {
    int steps = Math.max(outputIds.length - 1, 0);
    return decodeMs > 0 ? steps * 1000.0 / decodeMs : 0;
  }

  /** Prefill throughput in prompt tokens per second. */
  public double prefillTokensPerSecond() {
    return prefillMs > 0 ? promptIds.length * 1000.0 / prefillMs : 0;
  }
}
