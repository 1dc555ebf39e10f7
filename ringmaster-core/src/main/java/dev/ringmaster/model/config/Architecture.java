package dev.ringmaster.model.config;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The model families Ringmaster implements, by their Hugging Face {@code model_type}. */
public enum Architecture {
  /** DeepSeek-V2 / V2-Lite: MLA attention, softmax-scored MoE with shared experts. */
  DEEPSEEK_V2("deepseek_v2"),
  /** DeepSeek-V3 / R1 (and the base of GLM-5): MLA, sigmoid routing with bias, group top-k. */
  DEEPSEEK_V3("deepseek_v3"),
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
