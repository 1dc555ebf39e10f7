package dev.ringmaster.model.arch;

import java.util.ArrayList;
import java.util.List;

/**
 * A mixture-of-experts MLP: the router picks {@code topK} experts per token; tokens are grouped by
 * expert so that each expert's weights are read once per step for all its tokens; the weighted
 * expert outputs are summed in ascending expert order (as transformers does) and the shared
 * experts' output, if any, is added.
 */
public final class MoeMlp implements Mlp {
  private final Router router;
  private final DenseMlp[] experts;
  private final int firstExpert;
  private final DenseMlp shared;
  private final int topK;
  private final int hidden;

  /**
   * Creates the layer.
   *
   * @param router the router over all experts
   * @param experts the experts held here, ids {@code firstExpert ..}; entries may be null for
   *     experts owned by another rank
   * @param firstExpert id of {@code experts[0]}
   * @param shared shared experts MLP, or null
   * @param topK experts per token
   * @param hidden hidden size
   */
  public MoeMlp(
      Router router, DenseMlp[] experts, int firstExpert, DenseMlp shared, int topK, int hidden) {
    this.router = router;
    this.experts = experts;
    this.firstExpert = firstExpert;
    this.shared = shared;
    this.topK = topK;
    this.hidden = hidden;
  }

  @Override
  public void forward(float[] out, float[] x, int n) {
    int[] chosen = new int[n * topK];
    float[] weights = new float[n * topK];
    router.route(x, n, chosen, weights);
    java.util.Arrays.fill(out, 0, n * hidden, 0f);
    List<List<int[]>> byExpert = new ArrayList<>();
    for (int e = 0; e < experts.length; e++) {
      byExpert.add(new ArrayList<>());
    }
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < topK; j++) {
        int local = chosen[t * topK + j] - firstExpert;
        if (local >= 0 && local < experts.length && experts[local] != null) {
          byExpert.get(local).add(new int[] {t, j});
        }
      }
    }
    for (int e = 0; e < experts.length; e++) {
      List<int[]> rows = byExpert.get(e);
      if (rows.isEmpty()) {
        continue;
      }
      int m = rows.size();
      float[] in = new float[m * hidden];
      for (int r = 0; r < m; r++) {
        System.arraycopy(x, rows.get(r)[0] * hidden, in, r * hidden, hidden);
      }
      float[] y = new float[m * hidden];
      experts[e].forward(y, in, m);
      for (int r = 0; r < m; r++) {
        int t = rows.get(r)[0];
        float w = weights[t * topK + rows.get(r)[1]];
        for (int d = 0; d < hidden; d++) {
          out[t * hidden + d] += y[r * hidden + d] * w;
        }
      }
    }
    if (shared != null) {
      float[] s = new float[n * hidden];
      shared.forward(s, x, n);
      for (int i = 0; i < n * hidden; i++) {
        out[i] += s[i];
      }
    }
  }
}
