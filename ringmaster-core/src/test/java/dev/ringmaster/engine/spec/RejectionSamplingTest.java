package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.runtime.sampling.Philox;
import dev.ringmaster.runtime.sampling.SamplingDistribution;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Rejection sampling leaves the target distribution unchanged. Each case draws many tokens with
 * fixed seeds on a small vocabulary with known target {@code p} and draft {@code q}, and checks the
 * counts against {@code p} with {@link SamplingDistribution#misfit}: a chi-square statistic below
 * {@code df + 7 sqrt(2 df) + 12} (a false alarm rate of about 1e-6 or less) and no draw of a token
 * of probability 0. Two wrong variants of the residual step must fail the same check, which shows
 * the check can tell.
 */
class RejectionSamplingTest {
  private static final int DRAWS = 200_000;

  /** A target and a draft that disagree: the draft over-weights tokens 0 and 4 and misses 5. */
  private static final double[] P = {0.05, 0.30, 0.10, 0.25, 0.0, 0.20, 0.10};

  private static final double[] Q = {0.30, 0.20, 0.10, 0.10, 0.25, 0.0, 0.05};

  /** A rule for the residual step, for comparing the right one with wrong ones. */
  private interface Step {
    int choose(double[] p, double[] q, int x, double uAccept, double uResidual);
  }

  private static int[] counts(Step step, boolean pointMassDraft) {
    int[] counts = new int[P.length];
    for (int n = 0; n < DRAWS; n++) {
      int x = pointMassDraft ? 0 : RowDistribution.draw(Q, Philox.uniform(7, n, 5));
      int t =
          step.choose(
              P,
              pointMassDraft ? null : Q,
              x,
              Philox.uniform(11, n, DraftVerifier.ROUND_ACCEPT),
              Philox.uniform(11, n, DraftVerifier.ROUND_RESIDUAL));
      counts[t]++;
    }
    return counts;
  }

  @Test
  void sampledDraftTokensFollowTheTargetDistribution() {
    assertThat(SamplingDistribution.misfit(counts(DraftVerifier::acceptOrResample, false), P))
        .isNull();
  }

  @Test
  void pointMassDraftTokensFollowTheTargetDistribution() {
    // An n-gram proposal of token 0, which the target gives only 5%.
    assertThat(SamplingDistribution.misfit(counts(DraftVerifier::acceptOrResample, true), P))
        .isNull();
  }

  @Test
  void resamplingFromTheTargetInsteadOfTheResidualIsCaught() {
    Step wrong = (p, q, x, ua, ur) -> ua * q[x] < p[x] ? x : RowDistribution.draw(p, ur);
    assertThat(SamplingDistribution.misfit(counts(wrong, false), P)).isNotNull();
  }

  @Test
  void aResidualWithoutTheClampAtZeroIsCaught() {
    Step wrong =
        (p, q, x, ua, ur) -> {
          if (ua * q[x] < p[x]) {
            return x;
          }
          double[] r = new double[p.length];
          for (int i = 0; i < r.length; i++) {
            r[i] = Math.abs(p[i] - q[i]); // |p - q| instead of max(p - q, 0)
          }
          return RowDistribution.draw(r, ur);
        };
    assertThat(SamplingDistribution.misfit(counts(wrong, false), P)).isNotNull();
  }

  @Test
  void theVerifierAppliesTheRequestsTransformToTargetAndDraft() {
    // Logits of a target and a draft over 8 tokens; temperature, top-k and top-p cut both.
    float[] target = {2.0f, 1.5f, 0.3f, -1f, 1.9f, 0.8f, -0.5f, 1.0f};
    float[] draft = {0.5f, 2.2f, 1.0f, 0.2f, 1.9f, -1f, 0.7f, 1.4f};
    SamplingParams params = new SamplingParams(0.7, 0.9, 6, 0, 1, true, List.of());
    RowDistribution rule = RowDistribution.of(params, 8);
    double[] p = rule.probabilities(target, 0);
    double[] q = rule.probabilities(draft, 0);
    assertThat(p[3]).isZero(); // top-k 6 drops the two lowest
    float[] rows = new float[16];
    System.arraycopy(target, 0, rows, 0, 8);
    int[] counts = new int[8];
    int accepted = 0;
    for (int seed = 0; seed < DRAWS; seed++) {
      DraftVerifier verifier =
          new DraftVerifier(
              RowDistribution.of(new SamplingParams(0.7, 0.9, 6, seed, 1, true, List.of()), 8), 8);
      int x = RowDistribution.draw(q, Philox.uniform(seed, 0, ModelDrafter.ROUND_DRAFT));
      DraftVerifier.Outcome o =
          verifier.verify(new Draft(new int[] {x}, new double[][] {q}), rows, 0);
      counts[o.accepted() == 1 ? x : o.token()]++;
      accepted += o.accepted();
    }
    assertThat(SamplingDistribution.misfit(counts, p)).isNull();
    // The acceptance rate is sum_x min(p(x), q(x)).
    double expected = 0;
    for (int i = 0; i < 8; i++) {
      expected += Math.min(p[i], q[i]);
    }
    assertThat((double) accepted / DRAWS)
        .isCloseTo(expected, org.assertj.core.data.Offset.offset(0.01));
  }
}
