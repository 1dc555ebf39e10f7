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
}
