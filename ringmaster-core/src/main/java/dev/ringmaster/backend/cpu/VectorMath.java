package dev.ringmaster.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vectorised dot products and scaled additions on f32 activations, for the attention cores (scores
 * against cached keys or latents, accumulation of values). Each lane accumulates its slice of the
 * product in a fixed order, the lanes are then summed by a fixed pairwise tree and any tail that
 * does not fill a vector is added last, element by element: a result depends only on its inputs,
 * never on the batch, the thread that computes it or the JIT's state.
 */
public final class VectorMath {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int LANES = F.length();
  private static final VectorShuffle<Float> FOLD_8 = fold(8);
  private static final VectorShuffle<Float> FOLD_4 = fold(4);
  private static final VectorShuffle<Float> FOLD_2 = fold(2);
  private static final VectorShuffle<Float> FOLD_1 = fold(1);

  private VectorMath() {}

  /** {@code sum_i a[aOff + i] * b[bOff + i]} for {@code i < n}. */
  public static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    float s = 0f;
    if (bound > 0) {
      FloatVector acc = FloatVector.zero(F);
      for (; i < bound; i += LANES) {
        acc = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc);
      }
      s = sum(acc);
    }
    for (; i < n; i++) {
      s = Math.fma(a[aOff + i], b[bOff + i], s);
    }
    return s;
  }

  /** {@code y[yOff + i] += a * x[xOff + i]} for {@code i < n}, each as one fused multiply-add. */
  public static void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
    int bound = F.loopBound(n);
    int i = 0;
    if (bound > 0) {
      FloatVector av = FloatVector.broadcast(F, a);
      for (; i < bound; i += LANES) {
        FloatVector.fromArray(F, x, xOff + i)
            .fma(av, FloatVector.fromArray(F, y, yOff + i))
            .intoArray(y, yOff + i);
      }
    }
    for (; i < n; i++) {
      y[yOff + i] = Math.fma(x[xOff + i], a, y[yOff + i]);
    }
  }

  /** The lanes of {@code v} summed pairwise: lane {@code i} plus lane {@code i ^ half}, halving. */
  private static float sum(FloatVector v) {
    if (LANES >= 16) {
      v = v.add(v.rearrange(FOLD_8));
    }
    if (LANES >= 8) {
      v = v.add(v.rearrange(FOLD_4));
    }
    if (LANES >= 4) {
      v = v.add(v.rearrange(FOLD_2));
    }
    if (LANES >= 2) {
      v = v.add(v.rearrange(FOLD_1));
    }
    return v.lane(0);
  }

  private static VectorShuffle<Float> fold(int half) {
    return half < LANES ? VectorShuffle.fromOp(F, i -> i ^ half) : null;
  }
}
