package dev.ringmaster.model.config;

import java.util.List;
import java.util.regex.Pattern;

/**
 * How a checkpoint's weights are quantized, read from {@code config.json}'s {@code
 * quantization_config} and ModelOpt's {@code hf_quant_config.json}. Which tensors are quantized is
 * read off the checkpoint itself (a weight stored as {@code F8_E4M3} or packed {@code U8}); this
 * record says which formats those may be in and which modules must not be quantized.
 *
 * @param method the quantization method
 * @param blockRows FP8 block height ({@code weight_block_size[0]}; 0 unless {@link
 *     Method#FP8_BLOCK})
 * @param blockCols FP8 block width ({@code weight_block_size[1]})
 * @param groupSize NVFP4 elements per block scale (0 unless {@link Method#NVFP4})
 * @param excluded modules left unquantized: exact names, prefixes of submodules, or glob patterns
 *     ({@code *} matches any run of characters, dots included; {@code ?} one character)
 * @param kvCacheQuantAlgo ModelOpt's {@code kv_cache_quant_algo} ("" when absent); recorded only,
 *     the KV cache keeps the backend's own dtype
 * @param source the file(s) the settings came from, for error messages
 */
public record QuantizationConfig(
    Method method,
    int blockRows,
    int blockCols,
    int groupSize,
    List<String> excluded,
    String kvCacheQuantAlgo,
    String source) {

  /** An unquantized checkpoint. */
  public static final QuantizationConfig NONE =
      new QuantizationConfig(Method.NONE, 0, 0, 0, List.of(), "", "");

  /** Quantization methods Ringmaster reads. */
  public enum Method {
    /** Unquantized: every weight is f32, bf16 or f16. */
    NONE,
    /**
     * DeepSeek FP8 ({@code quant_method: "fp8"}): e4m3 weights with an f32 {@code weight_scale_inv}
     * per 128x128 block.
     */
    FP8_BLOCK,
    /**
     * ModelOpt FP8 ({@code quant_algo: "FP8"}): e4m3 weights with one f32 {@code weight_scale} per
     * tensor.
     */
    FP8_TENSOR,
    /**
     * ModelOpt NVFP4 ({@code quant_algo: "NVFP4"}): packed e2m1 weights, an e4m3 {@code
     * weight_scale} per 16 elements and an f32 {@code weight_scale_2} per tensor; producers may
     * also store some linears as per-tensor FP8.
     */
    NVFP4
  }

  /** Copies the exclusion list. */
  public QuantizationConfig {
    excluded = List.copyOf(excluded);
  }

  /** Whether the checkpoint is quantized at all. */
  public boolean quantized() {
    return method != Method.NONE;
  }

  /**
   * Whether module {@code module} (a weight's name without {@code .weight}) is excluded from
   * quantization: listed exactly, below a listed module ({@code model.layers.3.mlp} covers {@code
   * model.layers.3.mlp.down_proj}), or matched by a listed glob.
   */
  public boolean excludes(String module) {
    for (String p : excluded) {
      if (p.equals(module) || module.startsWith(p + ".")) {
        return true;
      }
      if ((p.indexOf('*') >= 0 || p.indexOf('?') >= 0) && glob(p).matcher(module).matches()) {
        return true;
      }
    }
    return false;
  }

  private static Pattern glob(String p) {
    StringBuilder re = new StringBuilder();
    for (char c : p.toCharArray()) {
      switch (c) {
        case '*' -> re.append(".*");
        case '?' -> re.append('.');
        default -> re.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(re.toString());
  }
}
