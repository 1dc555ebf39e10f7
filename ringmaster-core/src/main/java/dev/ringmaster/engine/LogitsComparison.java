package dev.ringmaster.engine;

import dev.ringmaster.util.Npy;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * Step-by-step comparison of two runs' logits (rows = steps, columns = vocabulary), e.g. tensor
 * parallel against one rank, where bf16 rounding legitimately moves logits a little.
 *
 * <p>Both measures are relative to the reference row's scale {@code s = max|ref|} (1 for an
 * all-zero row), so they compare directly: the <em>relative error</em> is {@code max|run - ref| /
 * s} and the <em>margin</em> is REF's {@code (top1 - top2) / s}. The argmax can flip only if the
 * error is at least half the margin, so a flip at a small margin is rounding (allowed) while a flip
 * at a margin of at least {@code minMargin} is a real difference (a failure). A step passes when
 * its relative error is at most {@code rtol} and, if its margin is at least {@code minMargin}, both
 * argmaxes agree; with {@code minMargin > 2 * rtol} the error bound already implies the argmax
 * check, which then names the step where the runs' tokens part.
 */
public final class LogitsComparison {
  private LogitsComparison() {}

  /**
   * One step.
   *
   * @param step row index
   * @param refArgmax REF's argmax (lowest id on ties)
   * @param runArgmax RUN's argmax
   * @param refMargin REF's (top1 - top2) / max|ref|
   * @param relError max|run - ref| / max|ref| (NaN if either has a NaN)
   */
  public record Step(int step, int refArgmax, int runArgmax, double refMargin, double relError) {
    /** Whether both runs' argmax agree. */
    public boolean sameArgmax() {
      return refArgmax == runArgmax;
    }
  }

  /**
   * The comparison of all steps.
   *
   * @param steps every step, in order
   * @param rtol the relative error allowed
   * @param minMargin REF's relative margin from which the argmax must agree
   * @param failures why it fails, one line per failing step; empty when it passes
   */
  public record Result(List<Step> steps, double rtol, double minMargin, List<String> failures) {
    /** Whether every step is within tolerance. */
    public boolean pass() {
      return failures.isEmpty();
    }

    /** Steps whose argmax agree. */
    public int equalArgmaxSteps() {
      return (int) steps.stream().filter(Step::sameArgmax).count();
    }

    /** The first step whose argmax differ, if any. */
    public OptionalInt firstDivergence() {
      return steps.stream().filter(s -> !s.sameArgmax()).mapToInt(Step::step).findFirst();
    }

    /** The largest relative error over all steps (NaN if any step's is; 0 with no steps). */
    public double maxRelError() {
      double max = 0;
      for (Step s : steps) {
        if (Double.isNaN(s.relError())) {
          return Double.NaN;
        }
        max = Math.max(max, s.relError());
      }
      return max;
    }
  }

  /**
   * Compares RUN against REF step by step.
   *
   * @throws IllegalArgumentException if the shapes differ or a row has fewer than 2 logits
   */
  public static Result compare(Npy.Matrix ref, Npy.Matrix run, double rtol, double minMargin) {
    if (ref.rows() != run.rows() || ref.cols() != run.cols()) {
      throw new IllegalArgumentException(
          "the logits' shapes differ: REF "
              + ref.shape()
              + ", RUN "
              + run.shape()
              + " (same model, prompt and --max-new-tokens needed)");
    }
    if (ref.cols() < 2) {
      throw new IllegalArgumentException("need at least 2 logits per step, got " + ref.cols());
    }
    List<Step> steps = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    for (int r = 0; r < ref.rows(); r++) {
      Step s = step(ref, run, r);
      steps.add(s);
      // Written so that NaN fails.
      if (!(s.relError() <= rtol)) {
        failures.add(
            String.format("step %d: relative error %.4g > rtol %s", r, s.relError(), rtol));
      }
      if (!s.sameArgmax() && s.refMargin() >= minMargin) {
        failures.add(
            String.format(
                "step %d: argmax differs (REF %d, RUN %d) at REF margin %.4g >= min-margin %s",
                r, s.refArgmax(), s.runArgmax(), s.refMargin(), minMargin));
      }
    }
    return new Result(List.copyOf(steps), rtol, minMargin, List.copyOf(failures));
  }

  private static Step step(Npy.Matrix ref, Npy.Matrix run, int r) {
    int n = ref.cols();
    int top1 = 0;
    int top2 = -1;
    int runTop = 0;
    double maxAbs = 0;
    double maxDiff = 0;
    boolean nan = false;
    for (int c = 0; c < n; c++) {
      float a = ref.get(r, c);
      float b = run.get(r, c);
      nan |= Float.isNaN(a) || Float.isNaN(b);
      maxAbs = Math.max(maxAbs, Math.abs(a));
      maxDiff = Math.max(maxDiff, Math.abs((double) b - a));
      if (c > 0) {
        if (a > ref.get(r, top1)) {
          top2 = top1;
          top1 = c;
        } else if (top2 < 0 || a > ref.get(r, top2)) {
          top2 = c;
        }
        if (b > run.get(r, runTop)) {
          runTop = c;
        }
      }
    }
    double scale = maxAbs > 0 ? maxAbs : 1;
    double margin = ((double) ref.get(r, top1) - ref.get(r, top2)) / scale;
    return new Step(r, top1, runTop, margin, nan ? Double.NaN : maxDiff / scale);
  }
}
