package dev.ringmaster.engine.spec;

import dev.ringmaster.runtime.sampling.Philox;

/**
 * Checks a draft against the target's logits for the last accepted token and every draft token
 * ({@code k + 1} rows) and decides which draft tokens stand and which token of the target's own
 * follows them.
 *
 * <p>Greedy: draft tokens are accepted while each equals the target's argmax at its position; the
 * first mismatch is replaced by the target's argmax, and after {@code k} accepted tokens the
 * target's argmax of the last row is the bonus token. The output is the output of plain greedy
 * decoding, token for token.
 *
 * <p>Sampled: draft token {@code x} at a position is accepted with probability {@code min(1, p(x) /
 * q(x))}, where {@code p} is the target's distribution there after the request's temperature /
 * top-k / top-p / min-p and {@code q} the one the draft drew {@code x} from (a point mass, {@code
 * q(x) = 1}, for greedy and n-gram drafts); at the first rejection the token is drawn from the
 * normalised residual {@code max(p - q, 0)}; after {@code k} acceptances the bonus token is drawn
 * from the last row's {@code p}. Each emitted token then follows {@code p} exactly (Leviathan et
 * al., 2023). The uniforms are Philox draws of (seed, output index, a round kept for this step), so
 * a seed reproduces the output.
 */
public final class DraftVerifier {
  /** Philox round of the accept/reject uniform (the plain sampler uses rounds below 64). */
  static final int ROUND_ACCEPT = 1000;

  /** Philox round of the residual draw after a rejection. */
  static final int ROUND_RESIDUAL = 1001;

  /** Philox round of the bonus draw after every draft token was accepted. */
  static final int ROUND_BONUS = 1002;

  /**
   * What a verify pass decided.
   *
   * @param accepted draft tokens kept, a prefix of the draft
   * @param token the target's token after them (a correction or the bonus token)
   */
  public record Outcome(int accepted, int token) {}

  private final RowDistribution target;
  private final int vocab;

  /** A verifier choosing tokens by {@code target}'s rules over rows of {@code vocab} logits. */
  public DraftVerifier(RowDistribution target, int vocab) {
    this.target = target;
    this.vocab = vocab;
  }

  /**
   * Whether the target's raw argmax of each row decides the outcome (greedy, no logit bias), so a
   * backend may take the argmax where the logits are ({@link #verifyArgmax}) instead of returning
   * them.
   */
  public boolean argmaxOnly() {
    return target.greedy() && target.params().logitBias().isEmpty();
  }

  /**
   * {@link #verify} for an {@link #argmaxOnly} target from the rows' argmax tokens ({@code
   * argmax[off + i]} for row {@code i} of {@code draft.length() + 1}; lowest id on ties, as {@link
   * RowDistribution#argmax}): the same outcome as verifying the rows' logits.
   */
  public Outcome verifyArgmax(Draft draft, int[] argmax, int off) {
    if (!argmaxOnly()) {
      throw new IllegalStateException("the target samples or biases its logits: verify logits");
    }
    int k = draft.length();
    if (argmax.length < off + k + 1) {
      throw new IllegalArgumentException(
          "verifying " + k + " draft tokens needs " + (k + 1) + " argmax rows from " + off);
    }
    for (int i = 0; i < k; i++) {
      if (argmax[off + i] != draft.tokens()[i]) {
        return new Outcome(i, argmax[off + i]);
      }
    }
    return new Outcome(k, argmax[off + k]);
  }

  /**
   * Verifies {@code draft} against {@code logits} ({@code draft.length() + 1} rows of the vocab).
   *
   * @param firstOutputIndex index among the sequence's outputs of the first draft position's token
   */
  public Outcome verify(Draft draft, float[] logits, long firstOutputIndex) {
    int k = draft.length();
    if (logits.length < (long) (k + 1) * vocab) {
      throw new IllegalArgumentException(
          "verifying " + k + " draft tokens needs " + (k + 1) + " rows of logits");
    }
    if (target.greedy()) {
      for (int i = 0; i < k; i++) {
        int t = target.argmax(logits, i * vocab);
        if (t != draft.tokens()[i]) {
          return new Outcome(i, t);
        }
      }
      return new Outcome(k, target.argmax(logits, k * vocab));
    }
    long seed = target.seed();
    for (int i = 0; i < k; i++) {
      double[] p = target.probabilities(logits, i * vocab);
      int x = draft.tokens()[i];
      double[] q = draft.probabilities() == null ? null : draft.probabilities()[i];
      long index = firstOutputIndex + i;
      int t =
          acceptOrResample(
              p,
              q,
              x,
              Philox.uniform(seed, index, ROUND_ACCEPT),
              Philox.uniform(seed, index, ROUND_RESIDUAL));
      if (t != x) {
        return new Outcome(i, t);
      }
    }
    double[] p = target.probabilities(logits, k * vocab);
    return new Outcome(
        k, RowDistribution.draw(p, Philox.uniform(seed, firstOutputIndex + k, ROUND_BONUS)));
  }

  /**
   * One rejection-sampling step: returns {@code x} when accepted (probability {@code min(1, p[x] /
   * q[x])}), else a draw from the normalised residual {@code max(p - q, 0)}, which never holds
   * {@code x} (a rejection means {@code p[x] < q[x]}).
   *
   * @param p the target's distribution
   * @param q the distribution {@code x} was drawn from, or null for a point mass at {@code x}
   * @param x the draft token
   * @param uAccept a uniform in [0, 1) for the accept test
   * @param uResidual an independent uniform in [0, 1) for the residual draw
   */
  public static int acceptOrResample(
      double[] p, double[] q, int x, double uAccept, double uResidual) {
    double qx = q == null ? 1 : q[x];
    if (!(qx > 0)) {
      throw new IllegalArgumentException(
          "draft token " + x + " has draft probability " + qx + ": it cannot have been drawn");
    }
    if (uAccept * qx < p[x]) {
      return x;
    }
    double[] residual = new double[p.length];
    double total = 0;
    for (int i = 0; i < p.length; i++) {
      double qi = q == null ? (i == x ? 1 : 0) : q[i];
      residual[i] = Math.max(p[i] - qi, 0);
      total += residual[i];
    }
    if (!(total > 0)) {
      return x; // p == q up to rounding: a rejection had probability 0
    }
    return RowDistribution.draw(residual, uResidual);
  }
}
