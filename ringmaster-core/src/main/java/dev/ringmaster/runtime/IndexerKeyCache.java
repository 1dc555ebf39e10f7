package dev.ringmaster.runtime;

import dev.ringmaster.backend.quant.Quantizers;
import java.util.Arrays;

/**
 * One sequence's indexer keys (DeepSeek Sparse Attention) on the CPU, part of its {@link KvCache}:
 * on each layer that runs an indexer, the key of every position ({@code index_head_dim} values,
 * after its LayerNorm and rotation), row-major by position. Stored either as f32 rows or, with FP8
 * keys ({@code --indexer-cache-dtype fp8_e4m3}), as e4m3 codes (one byte each) with one f32 scale
 * per position ({@link Quantizers#fp8Vector}): {@code index_head_dim + 4} bytes instead of {@code 4
 * * index_head_dim}.
 */
public final class IndexerKeyCache {
  private final int dim;
  private final boolean fp8;
  private final float[][] keys; // f32 rows per layer (null: no indexer there); null with FP8
  private final byte[][] codes; // e4m3 rows per layer; null without FP8
  private final float[][] scales; // one scale per position per layer; null without FP8

  /**
   * An empty cache whose layers {@code l} with {@code indexed[l]} hold keys of {@code dim} values.
   */
  IndexerKeyCache(boolean[] indexed, int dim, boolean fp8) {
    this.dim = dim;
    this.fp8 = fp8;
    int layers = indexed.length;
    keys = fp8 ? null : new float[layers][];
    codes = fp8 ? new byte[layers][] : null;
    scales = fp8 ? new float[layers][] : null;
    for (int l = 0; l < layers; l++) {
      if (indexed[l]) {
        if (fp8) {
          codes[l] = new byte[0];
          scales[l] = new float[0];
        } else {
          keys[l] = new float[0];
        }
      }
    }
  }

  /** The rows of some positions of every layer, copied out of a cache ({@link #copy}). */
  record Rows(float[][] keys, byte[][] codes, float[][] scales) {}

  /** Values per key ({@code index_head_dim}). */
  public int dim() {
    return dim;
  }

  /** Whether the keys are stored as FP8 codes and scales (else f32 rows). */
  public boolean fp8() {
    return fp8;
  }

  /** Whether layer {@code layer} caches indexer keys. */
  public boolean hasLayer(int layer) {
    return fp8 ? codes[layer] != null : keys[layer] != null;
  }

  /**
   * The f32 keys of layer {@code layer}, {@link #dim} values per position.
   *
   * @throws IllegalStateException for FP8 keys or a layer without an indexer
   */
  public float[] keys(int layer) {
    check(layer);
    if (fp8) {
      throw new IllegalStateException(
          "the indexer keys are FP8 codes and scales (--indexer-cache-dtype fp8_e4m3): read"
              + " codes(layer) and scales(layer)");
    }
    return keys[layer];
  }

  /** The e4m3 codes of layer {@code layer}, {@link #dim} per position (FP8 keys only). */
  public byte[] codes(int layer) {
    checkFp8(layer);
    return codes[layer];
  }

  /** The scales of layer {@code layer}, one per position (FP8 keys only). */
  public float[] scales(int layer) {
    checkFp8(layer);
    return scales[layer];
  }

  private void checkFp8(int layer) {
    check(layer);
    if (!fp8) {
      throw new IllegalStateException("the indexer keys are f32 rows: read keys(layer)");
    }
  }

  private void check(int layer) {
    if (!hasLayer(layer)) {
      throw new IllegalStateException("layer " + layer + " has no indexer key cache");
    }
  }

  /** Makes room for {@code capacity} positions on every indexed layer (contents kept). */
  void grow(int capacity) {
    int layers = fp8 ? codes.length : keys.length;
    for (int l = 0; l < layers; l++) {
      if (!hasLayer(l)) {
        continue;
      }
      if (fp8) {
        codes[l] = Arrays.copyOf(codes[l], capacity * dim);
        scales[l] = Arrays.copyOf(scales[l], capacity);
      } else {
        keys[l] = Arrays.copyOf(keys[l], capacity * dim);
      }
    }
  }

  /** Stores the key {@code src[off .. off+dim)} at position {@code pos} of layer {@code layer}. */
  void store(int layer, int pos, float[] src, int off) {
    if (fp8) {
      scales[layer][pos] = Quantizers.fp8Vector(src, off, dim, codes[layer], pos * dim);
    } else {
      System.arraycopy(src, off, keys[layer], pos * dim, dim);
    }
  }

  /** Copies positions {@code from .. from+n-1} of every indexed layer. */
  Rows copy(int from, int n) {
    int layers = fp8 ? codes.length : keys.length;
    float[][] k = fp8 ? null : new float[layers][];
    byte[][] c = fp8 ? new byte[layers][] : null;
    float[][] s = fp8 ? new float[layers][] : null;
    for (int l = 0; l < layers; l++) {
      if (!hasLayer(l)) {
        continue;
      }
      if (fp8) {
        c[l] = Arrays.copyOfRange(codes[l], from * dim, (from + n) * dim);
        s[l] = Arrays.copyOfRange(scales[l], from, from + n);
      } else {
        k[l] = Arrays.copyOfRange(keys[l], from * dim, (from + n) * dim);
      }
    }
    return new Rows(k, c, s);
  }

  /**
   * Writes {@code n} positions copied by {@link #copy} (from a cache of the same layout) at
   * positions {@code at ..}; room must have been made.
   */
  void paste(Rows rows, int at, int n) {
    if (fp8 != (rows.codes() != null)) {
      throw new IllegalArgumentException(
          "a page of "
              + (fp8 ? "f32" : "FP8")
              + " indexer keys cannot attach to a cache of "
              + (fp8 ? "FP8" : "f32")
              + " ones");
    }
    int layers = fp8 ? codes.length : keys.length;
    for (int l = 0; l < layers; l++) {
      if (!hasLayer(l)) {
        continue;
      }
      if (fp8) {
        System.arraycopy(rows.codes()[l], 0, codes[l], at * dim, n * dim);
        System.arraycopy(rows.scales()[l], 0, scales[l], at, n);
      } else {
        System.arraycopy(rows.keys()[l], 0, keys[l], at * dim, n * dim);
      }
    }
  }
}
