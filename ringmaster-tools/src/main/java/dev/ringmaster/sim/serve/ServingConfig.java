package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.Sharding;

/**
 * A serving configuration to predict.
 *
 * @param tp tensor-parallel size
 * @param ep expert-parallel size (1 = experts split by TP)
 * @param a2a how MoE tokens reach expert ranks
 * @param allreduce allreduce implementation
 * @param quant weight formats
 * @param kvDtype KV cache dtype (bf16 or fp8)
 * @param batch concurrent sequences in a decode step
 * @param contextLen KV length of each sequence
 * @param cudaGraph whether decode replays CUDA graphs
 * @param cudaGraphMaxBs largest captured batch size
 * @param chunkedPrefill tokens per prefill chunk (activation workspace)
 * @param spec speculative decoding, or null
 */
public record ServingConfig(
    int tp,
    int ep,
    A2aBackend a2a,
    AllreduceAlgorithm allreduce,
    QuantScheme quant,
    String kvDtype,
    int batch,
    int contextLen,
    boolean cudaGraph,
    int cudaGraphMaxBs,
    int chunkedPrefill,
    SpecDecoding spec) {

  /** Validates. */
  public ServingConfig {
    if (batch < 1 || contextLen < 1) {
      throw new IllegalArgumentException("batch size and context length must be positive");
    }
    if (tp < 1 || ep < 1) {
      throw new IllegalArgumentException(
          "--tp-size and --ep-size must be at least 1, got " + tp + " and " + ep);
    }
    if (cudaGraphMaxBs < 1) {
      throw new IllegalArgumentException(
          "--cuda-graph-max-bs must be at least 1, got "
              + cudaGraphMaxBs
              + "; use --disable-cuda-graph to decode without graphs");
    }
    if (chunkedPrefill < 1) {
      throw new IllegalArgumentException(
          "--chunked-prefill-size must be a positive number of tokens, got " + chunkedPrefill);
    }
    if (!kvDtype.equals("bf16") && !kvDtype.equals("fp8")) {
      throw new IllegalArgumentException("kv cache dtype must be bf16 or fp8");
    }
  }

  /** Defaults: bf16, NCCL allreduce, graphs up to 512, batch 1, context 4096. */
  public static ServingConfig defaults(int tp) {
    return new ServingConfig(
        tp,
        1,
        A2aBackend.NONE,
        AllreduceAlgorithm.NCCL,
        QuantScheme.preset("bf16"),
        "bf16",
        1,
        4096,
        true,
        512,
        8192,
        null);
  }

  /** The sharding of weights among ranks. */
  public Sharding sharding() {
    return new Sharding(tp, ep);
  }

  /** Copy with another batch size. */
  public ServingConfig withBatch(int b) {
    return new ServingConfig(
        tp,
        ep,
        a2a,
        allreduce,
        quant,
        kvDtype,
        b,
        contextLen,
        cudaGraph,
        cudaGraphMaxBs,
        chunkedPrefill,
        spec);
  }

  /** Copy with speculative decoding (or none). */
  public ServingConfig withSpec(SpecDecoding s) {
    return new ServingConfig(
        tp,
        ep,
        a2a,
        allreduce,
        quant,
        kvDtype,
        batch,
        contextLen,
        cudaGraph,
        cudaGraphMaxBs,
        chunkedPrefill,
        s);
  }
}
