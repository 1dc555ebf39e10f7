package dev.ringmaster.model.arch;

import dev.ringmaster.model.config.RopeConfig;

/**
 * Rotary embedding frequencies and the rotation itself, computed as transformers does (inverse
 * frequencies and angles in f32, YaRN's blended frequencies and its attention factor applied to cos
 * and sin). Two layouts: interleaved pairs (DeepSeek: dims 2i and 2i+1 rotate together) and halves
 * (Qwen: dims i and i+d/2).
 */
public final class RopeTable {
  private final float[] invFreq;
  private final float attentionScaling;
  private final boolean interleaved;
  private final int dim;

  /** Builds the table for {@code dim} rotary dims per head. */
  public RopeTable(RopeConfig rope, int dim) {
    this.dim = dim;
    this.interleaved = rope.interleaved();
    int half = dim / 2;
    invFreq = new float[half];
    float base = (float) rope.theta();
    for (int i = 0; i < half; i++) {
      // torch: base ** (arange(0, dim, 2).float() / dim), all in f32
      float exponent = (float) (2 * i) / (float) dim;
      float posFreq = (float) Math.pow(base, exponent);
      invFreq[i] = 1.0f / posFreq;
    }
    float scaling = 1.0f;
    switch (rope.type()) {
      case "linear" -> {
        for (int i = 0; i < half; i++) {
          invFreq[i] = invFreq[i] / (float) rope.factor();
        }
      }
      case "yarn" -> scaling = yarn(rope, base, half);
      default -> {}
    }
    this.attentionScaling = scaling;
  }

  private float yarn(RopeConfig rope, float base, int half) {
    double factor = rope.factor();
    double attentionFactor = rope.attentionFactor();
    if (Double.isNaN(attentionFactor)) {
      if (rope.mscale() != 0 && rope.mscaleAllDim() != 0) {
        attentionFactor =
            yarnMscale(factor, rope.mscale()) / yarnMscale(factor, rope.mscaleAllDim());
      } else {
        attentionFactor = yarnMscale(factor, 1.0);
      }
    }
    double low = correctionDim(rope.betaFast(), base, rope.originalMaxPositionEmbeddings());
    double high = correctionDim(rope.betaSlow(), base, rope.originalMaxPositionEmbeddings());
    if (rope.truncate()) {
      low = Math.floor(low);
      high = Math.ceil(high);
    }
    low = Math.max(low, 0);
    high = Math.min(high, dim - 1);
    if (low == high) {
      high += 0.001;
    }
    for (int i = 0; i < half; i++) {
      float posFreq = (float) Math.pow(base, (float) (2 * i) / (float) dim);
      float extrapolation = 1.0f / posFreq;
      float interpolation = 1.0f / ((float) factor * posFreq);
      float ramp = (float) ((i - low) / (high - low));
      ramp = Math.min(1f, Math.max(0f, ramp));
      float extrapolationFactor = 1f - ramp;
      invFreq[i] = interpolation * (1f - extrapolationFactor) + extrapolation * extrapolationFactor;
    }
    return (float) attentionFactor;
  }

  private double correctionDim(double rotations, double base, int maxPos) {
    return (dim * Math.log(maxPos / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
  }

  /** YaRN's magnitude correction, {@code 0.1 * mscale * ln(scale) + 1} for scale above 1. */
  public static double yarnMscale(double scale, double mscale) {
    if (scale <= 1) {
      return 1.0;
    }
    return 0.1 * mscale * Math.log(scale) + 1.0;
  }

  /** Rotary dims per head. */
  public int dim() {
    return dim;
  }

  /**
   * A copy of the {@code dim/2} inverse frequencies (YaRN-blended when configured), for backends
   * that compute the angles on the device.
   */
  public float[] inverseFrequencies() {
    return invFreq.clone();
  }

  /** True for DeepSeek's interleaved pairs, false for Qwen's halves. */
  public boolean interleaved() {
    return interleaved;
  }

  /** The factor YaRN multiplies cos and sin by (1 without YaRN). */
  public float attentionScaling() {
    return attentionScaling;
  }

  /**
   * Rotates {@code dim} values of {@code x} starting at {@code off}, in place, for position {@code
   * pos}. Interleaved layout writes the result in transformers' de-interleaved order (first the
   * rotated even dims, then the odd ones), which leaves dot products between rotated vectors
   * unchanged.
   */
  public void rotate(float[] x, int off, int pos, float[] scratch) {
    float[] cs = new float[dim];
    angles(pos, cs);
    rotate(x, off, cs, scratch);
  }

  /**
   * The cosines and sines of position {@code pos}'s angles, times {@link #attentionScaling}, into
   * {@code cs[0 .. dim/2)} and {@code cs[dim/2 .. dim)}: what {@link #rotate(float[], int, float[],
   * float[])} takes, so that the heads of one token share one evaluation of the trigonometric
   * functions (a prefill's rotations spent most of their time in them).
   */
  public void angles(int pos, float[] cs) {
    int half = dim / 2;
    for (int i = 0; i < half; i++) {
      float angle = (float) pos * invFreq[i];
      cs[i] = (float) Math.cos(angle) * attentionScaling;
      cs[half + i] = (float) Math.sin(angle) * attentionScaling;
    }
  }

  /**
   * {@link #rotate(float[], int, int, float[])} with the position's {@link #angles} given, the same
   * bits; {@code scratch} holds at least {@code dim} floats.
   */
  public void rotate(float[] x, int off, float[] cs, float[] scratch) {
    int half = dim / 2;
    if (interleaved) {
      for (int i = 0; i < half; i++) {
        float c = cs[i];
        float s = cs[half + i];
        float x0 = x[off + 2 * i];
        float x1 = x[off + 2 * i + 1];
        scratch[i] = x0 * c - x1 * s;
        scratch[half + i] = x1 * c + x0 * s;
      }
    } else {
      for (int i = 0; i < half; i++) {
        float c = cs[i];
        float s = cs[half + i];
        float x0 = x[off + i];
        float x1 = x[off + half + i];
        scratch[i] = x0 * c - x1 * s;
        scratch[half + i] = x1 * c + x0 * s;
      }
    }
    System.arraycopy(scratch, 0, x, off, dim);
  }
}
