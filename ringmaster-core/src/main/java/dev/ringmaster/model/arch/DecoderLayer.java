package dev.ringmaster.model.arch;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;

/**
 * One pre-norm decoder layer: {@code h = x + attn(norm1(x)); x' = h + mlp(norm2(h))}. Under tensor
 * parallelism the attention and MLP outputs are partial sums and are allreduced: the two allreduces
 * per layer of Megatron-style TP (the MLP's is skipped when an all-to-all MoE already returns the
 * full output).
 *
 * @param index layer index
 * @param inputNorm input_layernorm weight
 * @param attention the attention block
 * @param postAttentionNorm post_attention_layernorm weight
 * @param mlp dense MLP or mixture of experts
 * @param eps RMSNorm epsilon
 * @param rank this rank's parallel context
 * @param allReduceMlp whether the MLP output is a partial sum to allreduce
 */
public record DecoderLayer(
    int index,
    float[] inputNorm,
    Attention attention,
    float[] postAttentionNorm,
    Mlp mlp,
    double eps,
    RankContext rank,
    boolean allReduceMlp) {

  /** Runs the layer on {@code hidden} ({@code [tokens, hiddenSize]}) in place. */
  public void forward(float[] hidden, int hiddenSize, BatchLayout layout, KvCache[] caches) {
    int n = layout.numTokens();
    int size = n * hiddenSize;
    float[] normed = java.util.Arrays.copyOf(hidden, size);
    CpuOps.rmsNorm(normed, 0, n, hiddenSize, hiddenSize, inputNorm, eps);
    float[] attnOut = new float[size];
    attention.forward(attnOut, normed, layout, caches, index);
    rank.allReduce(attnOut, size);
    CpuOps.addInPlace(hidden, attnOut, size);
    System.arraycopy(hidden, 0, normed, 0, size);
    CpuOps.rmsNorm(normed, 0, n, hiddenSize, hiddenSize, postAttentionNorm, eps);
    float[] mlpOut = new float[size];
    mlp.forward(mlpOut, normed, n);
    if (allReduceMlp) {
      rank.allReduce(mlpOut, size);
    }
    CpuOps.addInPlace(hidden, mlpOut, size);
  }
}
