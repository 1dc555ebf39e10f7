package dev.ringmaster.model.config;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The model families Ringmaster implements, by their Hugging Face {@code model_type}. */
public enum Architecture {
  /** DeepSeek-V2 / V2-Lite: MLA attention, softmax-scored MoE with shared experts. */
  DEEPSEEK_V2("deepseek_v2"),
  /** DeepSeek-V3 / R1 (and the base of GLM-5): MLA, sigmoid routing with bias, group top-k. */
  DEEPSEEK_V3("deepseek_v3"),
  /**
   * DeepSeek-V3.2: DeepSeek-V3 with DeepSeek Sparse Attention (a lightning indexer picks the
   * positions each query attends to); the indexer rotates its keys in halves.
   */
  DEEPSEEK_V32("deepseek_v32"),
  /**
   * GLM-5: DeepSeek-V3.2's design with an interleaved-rotary indexer and optional top-k sharing
   * between layers ({@code indexer_types}).
   */
  GLM_MOE_DSA("glm_moe_dsa"),
  /** Qwen3-MoE: grouped-query attention with per-head q/k norms, softmax-scored MoE. */
  QWEN3_MOE("qwen3_moe");

  private final String modelType;

  Architecture(String modelType) {
    this.modelType = modelType;
  }

  /** The {@code model_type} string in config.json. */
  public String modelType() {
    return modelType;
  }

  /** True for the architectures with multi-head latent attention. */
  public boolean usesMla() {
    return this != QWEN3_MOE;
  }

  /** True for the architectures with DeepSeek Sparse Attention (the lightning indexer). */
  public boolean usesSparseAttention() {
    return this == DEEPSEEK_V32 || this == GLM_MOE_DSA;
  }

  /** Finds the architecture for a {@code model_type}, or null. */
  public static Architecture fromModelType(String modelType) {
    for (Architecture a : values()) {
      if (a.modelType.equals(modelType)) {
        return a;
      }
    }
    return null;
  }

  /** Comma-separated list of supported model types, for error messages. */
  public static String supportedList() {
    return Arrays.stream(values()).map(Architecture::modelType).collect(Collectors.joining(", "));
  }
}
