package dev.ringmaster.model.arch;

/** The feed-forward half of a decoder layer: a dense MLP or a mixture of experts. */
public interface Mlp {
  /**
   * Computes the MLP output for {@code n} tokens.
   *
   * @param out output, {@code [n, hidden]} (overwritten)
   * @param x normalised input, {@code [n, hidden]}
   * @param n number of tokens
   */
  void forward(float[] out, float[] x, int n);
}
