package dev.ringmaster.backend.cpu.bench;

import dev.ringmaster.backend.DType;
import java.util.Locale;

/** A weight format {@link CpuMatmulBenchmark} times: a float dtype or a quantized format. */
public enum WeightFormat {
  /** f32 weights. */
  F32("f32"),
  /** bf16 weights. */
  BF16("bf16"),
  /** f16 weights. */
  F16("f16"),
  /** e4m3 codes with 128x128 block scales (DeepSeek FP8). */
  FP8_BLOCK("fp8-block"),
  /** e4m3 codes with one tensor scale. */
  FP8_TENSOR("fp8-tensor"),
  /** e2m1 codes, an e4m3 scale per 16 columns and a global scale. */
  NVFP4("nvfp4");

  private final String label;

  WeightFormat(String label) {
    this.label = label;
  }

  /** The name printed and parsed: {@code f32}, {@code fp8-block}, ... */
  public String label() {
    return label;
  }

  /** Whether the weights are quantized codes. */
  public boolean quantized() {
    return ordinal() >= FP8_BLOCK.ordinal();
  }

  /** Parses a label, or a float dtype name as {@link DType#parse} takes it. */
  public static WeightFormat parse(String text) {
    String name = text.strip().toLowerCase(Locale.ROOT);
    for (WeightFormat f : values()) {
      if (f.label.equals(name)) {
        return f;
      }
    }
    try {
      return valueOf(DType.parse(name).name());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown weight format '"
              + text
              + "' (use f32, bf16, f16, fp8-block, fp8-tensor or nvfp4)",
          e);
    }
  }

  @Override
  public String toString() {
    return label;
  }
}
