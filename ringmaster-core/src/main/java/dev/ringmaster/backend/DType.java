package dev.ringmaster.backend;

/**
 * Element types of tensors on disk and in memory, with their safetensors names. {@code U8} also
 * holds packed NVFP4 weights (two e2m1 codes per byte) and {@code F8_E4M3} FP8 weights and NVFP4
 * block scales; see {@code dev.ringmaster.backend.quant}.
 */
public enum DType {
  F32("F32", 4),
  BF16("BF16", 2),
  F16("F16", 2),
  I64("I64", 8),
  I32("I32", 4),
  U8("U8", 1),
  /** Booleans, one byte each (an EAGLE-3 head's {@code t2d} mask). */
  BOOL("BOOL", 1),
  /** 8-bit float e4m3 ("fn": no infinities, 0x7f/0xff are NaN, max 448), quantized weights. */
  F8_E4M3("F8_E4M3", 1);

  private final String safetensorsName;
  private final int bytes;

  DType(String safetensorsName, int bytes) {
    this.safetensorsName = safetensorsName;
    this.bytes = bytes;
  }

  /** Size of one element in bytes. */
  public int bytes() {
    return bytes;
  }

  /** The dtype string used in safetensors headers. */
  public String safetensorsName() {
    return safetensorsName;
  }

  /** Parses a safetensors dtype string, or returns null when it is not supported. */
  public static DType fromSafetensors(String name) {
    for (DType t : values()) {
      if (t.safetensorsName.equals(name)) {
        return t;
      }
    }
    return null;
  }

  /** Parses a user-facing name such as {@code bf16}, {@code float32}. */
  public static DType parse(String name) {
    return switch (name.toLowerCase(java.util.Locale.ROOT)) {
      case "f32", "fp32", "float32", "float" -> F32;
      case "bf16", "bfloat16" -> BF16;
      case "f16", "fp16", "float16", "half" -> F16;
      default ->
          throw new IllegalArgumentException(
              "unsupported dtype '" + name + "' (use f32, bf16 or f16)");
    };
  }
}
