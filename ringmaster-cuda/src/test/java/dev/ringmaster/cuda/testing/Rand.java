package dev.ringmaster.cuda.testing;

import dev.ringmaster.backend.cpu.Numerics;
import java.util.SplittableRandom;

/**
 * Fresh random test data (a new seed every run, printed so a failure can be replayed) and bf16
 * weights kept both as bits for the device and as the exact f32 values the reference uses.
 */
public final class Rand {
  private final SplittableRandom random;
  private final long seed;

  /** A generator with a fresh seed. */
  public Rand() {
    this(System.nanoTime());
  }

  /** A generator with a given seed. */
  public Rand(long seed) {
    this.seed = seed;
    this.random = new SplittableRandom(seed);
  }

  /** The seed, for failure messages. */
  public long seed() {
    return seed;
  }

  /** The underlying generator. */
  public SplittableRandom random() {
    return random;
  }

  /** {@code n} uniform values in {@code [-scale, scale)}. */
  public float[] uniform(int n, float scale) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) ((random.nextDouble() * 2 - 1) * scale);
    }
    return v;
  }

  /** A uniform integer in {@code [0, bound)}. */
  public int nextInt(int bound) {
    return random.nextInt(bound);
  }

  /** bf16 weights: uniform in {@code [-scale, scale)}, rounded to bf16. */
  public Bf16 bf16(int n, float scale) {
    return Bf16.of(uniform(n, scale));
  }

  /**
   * bf16 values as device bits and exact f32 values.
   *
   * @param bits the bf16 bits
   * @param values the same values as f32
   */
  public record Bf16(short[] bits, float[] values) {
    /** Rounds {@code v} to bf16. */
    public static Bf16 of(float[] v) {
      short[] bits = new short[v.length];
      float[] values = new float[v.length];
      for (int i = 0; i < v.length; i++) {
        bits[i] = Numerics.floatToBf16(v[i]);
        values[i] = Numerics.bf16ToFloat(bits[i]);
      }
      return new Bf16(bits, values);
    }
  }
}
