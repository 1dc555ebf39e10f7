package dev.ringmaster.model.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * How the indexer key cache of DeepSeek Sparse Attention stores its keys: a run's choice (the
 * {@code --indexer-cache-dtype} flag), not the checkpoint's.
 */
public enum IndexerCacheDtype {
  /** The backend's own precision: f32 on the CPU, bf16 on the GPU. */
  AUTO("auto"),
  /**
   * e4m3 codes with one f32 scale per key ({@code index_head_dim <= 128}): {@code s = amax / 448}
   * (1 for an all-zero key), codes {@code e4m3(clamp(k / s, ±448))} rounded to nearest even, as
   * DeepSeek-V3.2 and SGLang cache the indexer keys; the queries are quantized the same way per
   * head.
   */
  FP8_E4M3("fp8_e4m3");

  /** The largest key the FP8 form takes: one 128-value scale block per key. */
  public static final int FP8_MAX_HEAD_DIM = 128;

  private final String cliName;

  IndexerCacheDtype(String cliName) {
    this.cliName = cliName;
  }

  /** The flag's spelling ({@code auto}, {@code fp8_e4m3}). */
  public String cliName() {
    return cliName;
  }

  @Override
  public String toString() {
    return cliName;
  }

  /**
   * The value of a flag spelling (case-insensitive).
   *
   * @throws IllegalArgumentException naming the accepted spellings
   */
  public static IndexerCacheDtype parse(String s) {
    String v = s.strip().toLowerCase(Locale.ROOT);
    for (IndexerCacheDtype d : values()) {
      if (d.cliName.equals(v)) {
        return d;
      }
    }
    throw new IllegalArgumentException(
        "indexer cache dtype must be "
            + Arrays.stream(values()).map(d -> d.cliName).collect(Collectors.joining(" or "))
            + ", got '"
            + s
            + "'");
  }
}
