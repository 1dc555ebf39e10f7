package dev.ringmaster.model.config;

/**
 * Rotary position embedding parameters, normalised from either spelling in config.json ({@code
 * rope_scaling} + {@code rope_theta}, or transformers 5's {@code rope_parameters}).
 *
 * @param theta base of the inverse frequencies
 * @param type "default", "yarn" or "linear"
 * @param factor context scaling factor (1 when unscaled)
 * @param originalMaxPositionEmbeddings YaRN's original context length
 * @param betaFast YaRN ramp parameter (default 32)
 * @param betaSlow YaRN ramp parameter (default 1)
 * @param mscale YaRN mscale (0 when absent)
 * @param mscaleAllDim YaRN mscale_all_dim (0 when absent)
 * @param attentionFactor explicit YaRN attention factor, or NaN when absent
 * @param truncate YaRN: whether the correction range is truncated to integers (default true)
 * @param interleaved true when rotation pairs are adjacent dims (DeepSeek), false for halves (Qwen)
 */
public record RopeConfig(
    double theta,
    String type,
    double factor,
    int originalMaxPositionEmbeddings,
    double betaFast,
    double betaSlow,
    double mscale,
    double mscaleAllDim,
    double attentionFactor,
    boolean truncate,
    boolean interleaved) {

  /** True when YaRN scaling is configured. */
  public boolean isYarn() {
    return "yarn".equals(type);
  }

  /** The same rotation with the pair layout {@code interleaved} (DSA indexers choose their own). */
  public RopeConfig withInterleaved(boolean interleaved) {
    return new RopeConfig(
        theta,
        type,
        factor,
        originalMaxPositionEmbeddings,
        betaFast,
        betaSlow,
        mscale,
        mscaleAllDim,
        attentionFactor,
        truncate,
        interleaved);
  }
}
