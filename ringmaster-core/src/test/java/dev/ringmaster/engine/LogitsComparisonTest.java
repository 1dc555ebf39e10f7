package dev.ringmaster.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.util.Npy;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LogitsComparisonTest {
  private static final double RTOL = 0.02;
  private static final double MIN_MARGIN = 0.05;

  /** Random logits in [-10, 10] with a clear winner per row (relative margin 0.1 and more). */
  private static Npy.Matrix logits(int rows, int cols, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] d = new float[rows * cols];
    for (int i = 0; i < d.length; i++) {
      d[i] = (float) (r.nextDouble() * 16 - 8);
    }
    for (int row = 0; row < rows; row++) {
      d[row * cols + r.nextInt(cols)] = 10;
    }
    return new Npy.Matrix(rows, cols, d);
  }

  private static Npy.Matrix copy(Npy.Matrix m) {
    return new Npy.Matrix(m.rows(), m.cols(), m.data().clone());
  }

  @Test
  void identicalLogitsPass() {
    Npy.Matrix ref = logits(5, 50, 1);
    LogitsComparison.Result r = LogitsComparison.compare(ref, copy(ref), RTOL, MIN_MARGIN);
    assertThat(r.pass()).isTrue();
    assertThat(r.steps()).hasSize(5);
    assertThat(r.equalArgmaxSteps()).isEqualTo(5);
    assertThat(r.firstDivergence()).isEmpty();
    assertThat(r.maxRelError()).isZero();
    assertThat(r.steps().get(0).refMargin()).isGreaterThanOrEqualTo(0.2);
  }

  @Test
  void smallNoiseBelowRtolPasses() {
    Npy.Matrix ref = logits(4, 50, 2);
    Npy.Matrix run = copy(ref);
    run.data()[7] += 0.1f; // 0.01 of max|ref| = 10
    LogitsComparison.Result r = LogitsComparison.compare(ref, run, RTOL, MIN_MARGIN);
    assertThat(r.pass()).isTrue();
    assertThat(r.maxRelError()).isCloseTo(0.01, org.assertj.core.data.Offset.offset(1e-6));
  }

  @Test
  void perturbationAboveRtolFails() {
    Npy.Matrix ref = logits(4, 50, 3);
    Npy.Matrix run = copy(ref);
    run.data()[2 * 50 + 11] -= 0.3f; // 0.03 of max|ref| at step 2
    LogitsComparison.Result r = LogitsComparison.compare(ref, run, RTOL, MIN_MARGIN);
    assertThat(r.pass()).isFalse();
    assertThat(r.failures()).singleElement().asString().startsWith("step 2: relative error");
    assertThat(r.maxRelError()).isCloseTo(0.03, org.assertj.core.data.Offset.offset(1e-6));
  }

  @Test
  void argmaxFlipAtATinyMarginPasses() {
    Npy.Matrix ref = logits(3, 50, 4);
    int top = LogitsComparison.compare(ref, ref, RTOL, MIN_MARGIN).steps().get(1).refArgmax();
    int other = (top + 1) % 50;
    ref.data()[50 + other] = 9.999f; // margin 0.0001 of max|ref| at step 1
    Npy.Matrix run = copy(ref);
    run.data()[50 + other] = 10.001f; // RUN prefers the runner-up
    LogitsComparison.Result r = LogitsComparison.compare(ref, run, RTOL, MIN_MARGIN);
    assertThat(r.pass()).as("%s", r.failures()).isTrue();
    assertThat(r.equalArgmaxSteps()).isEqualTo(2);
    assertThat(r.firstDivergence()).hasValue(1);
    assertThat(r.steps().get(1).refMargin())
        .isCloseTo(1e-4, org.assertj.core.data.Offset.offset(1e-6));
    assertThat(r.steps().get(1).runArgmax()).isEqualTo(other);
  }

  @Test
  void argmaxFlipAtALargeMarginFails() {
    Npy.Matrix ref = logits(3, 50, 5);
    int top = LogitsComparison.compare(ref, ref, RTOL, MIN_MARGIN).steps().get(0).refArgmax();
    int other = (top + 1) % 50;
    ref.data()[other] = 9f; // margin 0.1 at step 0
    Npy.Matrix run = copy(ref);
    run.data()[other] = 10.5f;
    // Loose rtol, so that only the argmax check can catch it.
    LogitsComparison.Result r = LogitsComparison.compare(ref, run, 0.5, MIN_MARGIN);
    assertThat(r.pass()).isFalse();
    assertThat(r.failures())
        .singleElement()
        .asString()
        .contains("step 0: argmax differs (REF " + top + ", RUN " + other + ")");
    assertThat(r.firstDivergence()).hasValue(0);
    // With the default rtol the error itself is caught too.
    assertThat(LogitsComparison.compare(ref, run, RTOL, MIN_MARGIN).failures()).hasSize(2);
  }

  @Test
  void nanFails() {
    Npy.Matrix ref = logits(2, 10, 6);
    Npy.Matrix run = copy(ref);
    run.data()[3] = Float.NaN;
    LogitsComparison.Result r = LogitsComparison.compare(ref, run, RTOL, MIN_MARGIN);
    assertThat(r.pass()).isFalse();
    assertThat(r.maxRelError()).isNaN();
  }

  @Test
  void mismatchedShapesAreAnError() {
    assertThatThrownBy(
            () -> LogitsComparison.compare(logits(3, 50, 7), logits(4, 50, 7), RTOL, MIN_MARGIN))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("REF (3, 50), RUN (4, 50)");
    assertThatThrownBy(
            () -> LogitsComparison.compare(logits(3, 50, 7), logits(3, 49, 7), RTOL, MIN_MARGIN))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shapes differ");
  }
}
