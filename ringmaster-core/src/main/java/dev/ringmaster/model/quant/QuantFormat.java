package dev.ringmaster.model.quant;

import java.util.Locale;

/** The formats {@code ringmaster model quantize} writes. */
public enum QuantFormat {
  /**
   * DeepSeek FP8: {@code config.json quantization_config = {quant_method: fp8, fmt: e4m3,
   * activation_scheme: dynamic, weight_block_size: [128, 128]}}; per linear {@code weight} F8_E4M3
   * and {@code weight_scale_inv} F32 per 128x128 block.
   */
  FP8,
  /**
   * ModelOpt NVFP4: {@code quantization_config} with {@code quant_method: modelopt, quant_algo:
   * NVFP4} and {@code hf_quant_config.json}; per linear {@code weight} U8 (two e2m1 codes a byte),
   * {@code weight_scale} F8_E4M3 per 16 elements, {@code weight_scale_2} and {@code input_scale}
   * F32 scalars.
   */
  NVFP4;

  /** Parses {@code fp8} or {@code nvfp4}. */
  public static QuantFormat parse(String s) {
    return switch (s.toLowerCase(Locale.ROOT)) {
      case "fp8" -> FP8;
      case "nvfp4" -> NVFP4;
      default ->
          throw new IllegalArgumentException(
              "unknown quantization format '" + s + "' (use fp8 or nvfp4)");
    };
  }
}
