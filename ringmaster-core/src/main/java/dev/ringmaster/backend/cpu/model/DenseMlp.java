package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuOps;

/**
 * SwiGLU MLP: {@code down(silu(gate(x)) * up(x))}. Used for dense layers, shared experts and (with
 * one instance per expert) routed experts.
 *
 * @param gate gate projection {@code [inter, hidden]}
 * @param up up projection {@code [inter, hidden]}
 * @param down down projection {@code [hidden, inter]}
 */
public record DenseMlp(Linear gate, Linear up, Linear down) {
  /** Computes the MLP's output for {@code n} tokens of {@code x} into {@code out}. */
  public void forward(float[] out, float[] x, int n) {
    int inter = gate.out();
    float[] g = new float[n * inter];
    float[] u = new float[n * inter];
    Linear.applyBoth(gate, g, up, u, x, n);
    CpuOps.siluMul(g, g, u, n * inter);
    down.apply(out, g, n);
  }

  /**
   * The MLP's output for rows {@code xRows} of {@code x} into {@code out} ({@code [xRows.length,
   * hidden]}), all on the calling thread: one task of {@link MlpTasks}. The results are those of
   * {@link #forward} on the same rows.
   */
  void forwardRowsHere(float[] out, float[] x, int[] xRows) {
    int m = xRows.length;
    int inter = gate.out();
    float[] g = new float[m * inter];
    float[] u = new float[m * inter];
    Linear.applyBothRowsHere(gate, g, up, u, x, xRows);
    CpuOps.siluMul(g, g, u, m * inter);
    int[] rows = new int[m];
    for (int t = 0; t < m; t++) {
      rows[t] = t;
    }
    down.applyRowsHere(out, g, rows);
  }

  /** Multiply-adds of one token through the MLP. */
  double macsPerToken() {
    return (double) gate.in() * (gate.out() + up.out()) + (double) down.in() * down.out();
  }
}
