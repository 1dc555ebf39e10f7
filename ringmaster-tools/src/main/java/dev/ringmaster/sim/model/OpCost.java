package dev.ringmaster.sim.model;

/**
 * Work one rank does for one operator in one step.
 *
 * @param name operator name, e.g. {@code layer.attn.q_b_proj}
 * @param category breakdown term
 * @param kind how the hardware model times it: GEMM (weight streaming or tensor-core bound) or
 *     ATTENTION (KV streaming)
 * @param flops floating-point operations (multiply-add = 2)
 * @param bytes bytes read or written from device memory
 * @param computeDtype tensor-core rate used for the flops (bf16, fp8, nvfp4)
 * @param kernels kernel launches it takes
 */
public record OpCost(
    String name,
    Category category,
    Kind kind,
    double flops,
    double bytes,
    String computeDtype,
    int kernels) {

  /** Timing class of an operator. */
  public enum Kind {
    /** Matrix multiply against weights. */
    GEMM,
    /** Attention over cached tokens. */
    ATTENTION,
    /** Small element-wise kernels: norms, rope, top-k, activation; counted for launches only. */
    MISC
  }

  /** The same op with flops and bytes multiplied by {@code n} (n identical layers). */
  public OpCost times(int n) {
    return new OpCost(name, category, kind, flops * n, bytes * n, computeDtype, kernels * n);
  }
}
