package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * The paged latent KV cache of every layer: one device buffer {@code [layers, blocks, blockSize,
 * D]} of bf16 ({@code D = kv_lora_rank + qk_rope_head_dim}, the layout of the MLA kernels) and a
 * free list of block ids. Block 0 is never handed out: padding tokens of a graph batch write and
 * read it, so real sequences never see their values.
 *
 * <p>Models with DeepSeek Sparse Attention also hold the indexer keys of every layer that runs an
 * indexer: a second buffer {@code [indexed layers, blocks, blockSize, index_head_dim]} of bf16,
 * paged by the same block ids, so a block (and a prefix-cache page sharing it) carries both.
 *
 * <p>Blocks are reference-counted so caches and the prefix cache can share them: {@link #take}
 * hands out a block with one reference, {@link #retain} adds one, {@link #give} drops one, and the
 * block returns to the free list when none is left.
 */
final class BlockPool implements AutoCloseable {
  private final DeviceBuffer cache;
  private final int layers;
  private final int numBlocks;
  private final int blockSize;
  private final int rowWidth;
  private final DeviceBuffer indexKeys; // null without sparse attention
  private final int[] indexSlot; // layer -> its slot in indexKeys, -1 for layers without indexer
  private final int indexWidth;
  private final int[] free;
  private final int[] refs;
  private int freeCount;

  BlockPool(int layers, int numBlocks, int blockSize, int rowWidth, CudaStream stream) {
    this(layers, numBlocks, blockSize, rowWidth, null, 0, stream);
  }

  /**
   * A pool whose layers {@code l} with {@code indexed[l]} also cache indexer keys of {@code
   * indexWidth} values ({@code indexed} null: none).
   */
  BlockPool(
      int layers,
      int numBlocks,
      int blockSize,
      int rowWidth,
      boolean[] indexed,
      int indexWidth,
      CudaStream stream) {
    if (numBlocks < 2) {
      throw new IllegalArgumentException("the KV cache needs at least 2 blocks");
    }
    this.layers = layers;
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.rowWidth = rowWidth;
    this.cache = DeviceBuffer.allocate(bytes(layers, numBlocks, blockSize, rowWidth));
    // Zero the padding block of every layer so padded rows compute on finite values.
    long layerBytes = layerBytes();
    long blockBytes = 2L * blockSize * rowWidth;
    for (int l = 0; l < layers; l++) {
      CudaDriverAccess.memsetZero(cache.ptr(l * layerBytes), blockBytes, stream);
    }
    this.indexWidth = indexWidth;
    indexSlot = new int[layers];
    int slots = 0;
    for (int l = 0; l < layers; l++) {
      indexSlot[l] = indexed != null && indexed[l] ? slots++ : -1;
    }
    indexKeys =
        slots == 0 ? null : DeviceBuffer.allocate(bytes(slots, numBlocks, blockSize, indexWidth));
    for (int i = 0; i < slots; i++) {
      CudaDriverAccess.memsetZero(
          indexKeys.ptr(i * indexLayerBytes()), 2L * blockSize * indexWidth, stream);
    }
    refs = new int[numBlocks];
    free = new int[numBlocks - 1];
    for (int i = 0; i < free.length; i++) {
      free[i] = numBlocks - 1 - i; // hand out low ids first
    }
    freeCount = free.length;
  }

  /**
   * Bytes one token takes in the pool of a model: a bf16 latent row ({@code kv_lora_rank +
   * qk_rope_head_dim}) in every layer, and a bf16 indexer key ({@code index_head_dim}) in every
   * layer that runs an indexer (DeepSeek Sparse Attention).
   */
  public static long bytesPerToken(dev.ringmaster.model.config.ModelConfig cfg) {
    return bytes(cfg.numLayers(), 1, 1, cfg.kvLoraRank() + cfg.qkRopeHeadDim())
        + indexerBytesPerToken(cfg);
  }

  /** For each layer, whether it caches indexer keys (null without sparse attention). */
  static boolean[] indexedLayers(dev.ringmaster.model.config.ModelConfig cfg) {
    if (cfg.sparseAttention() == null) {
      return null;
    }
    boolean[] out = new boolean[cfg.numLayers()];
    for (int l = 0; l < out.length; l++) {
      out[l] = cfg.sparseAttention().hasIndexer(l);
    }
    return out;
  }

  /** Bytes of one token's bf16 indexer keys across the layers that run an indexer (0: none). */
  static long indexerBytesPerToken(dev.ringmaster.model.config.ModelConfig cfg) {
    var dsa = cfg.sparseAttention();
    return dsa == null ? 0 : bytes(dsa.indexedLayers(), 1, 1, dsa.indexHeadDim());
  }

  /** Bytes of a pool of {@code numBlocks} blocks. */
  static long bytes(int layers, long numBlocks, int blockSize, int rowWidth) {
    return 2L * layers * numBlocks * blockSize * rowWidth;
  }

  private long layerBytes() {
    return 2L * numBlocks * blockSize * rowWidth;
  }

  private long indexLayerBytes() {
    return 2L * numBlocks * blockSize * indexWidth;
  }

  /**
   * Device pointer of layer {@code l}'s indexer keys {@code [blocks, blockSize, index_head_dim]}
   * (bf16); throws for a layer without an indexer.
   */
  long indexKeysPtr(int l) {
    if (indexKeys == null || indexSlot[l] < 0) {
      throw new IllegalStateException("layer " + l + " has no indexer key cache");
    }
    return indexKeys.ptr() + indexSlot[l] * indexLayerBytes();
  }

  /** Bytes of the indexer-key cache (0 without sparse attention). */
  long indexerBytes() {
    return indexKeys == null ? 0 : indexKeys.bytes();
  }

  /** Device pointer of layer {@code l}'s cache {@code [blocks, blockSize, D]}. */
  long layerPtr(int l) {
    return cache.ptr() + l * layerBytes();
  }

  int blockSize() {
    return blockSize;
  }

  int numLayers() {
    return layers;
  }

  /** Tokens the pool can hold (the padding block excluded). */
  long capacityTokens() {
    return (long) (numBlocks - 1) * blockSize;
  }

  /** Bytes of device memory held (latent rows and indexer keys). */
  long bytes() {
    return cache.bytes() + indexerBytes();
  }

  /** Blocks not in use. */
  synchronized int freeBlocks() {
    return freeCount;
  }

  /** Takes a block; throws when the pool is exhausted. */
  synchronized int take() {
    if (freeCount == 0) {
      throw new IllegalStateException(
          "the GPU KV cache is full ("
              + capacityTokens()
              + " tokens in blocks of "
              + blockSize
              + "): release finished sequences' caches, or give the cache more memory"
              + " (--mem-fraction-static)");
    }
    int block = free[--freeCount];
    refs[block] = 1;
    return block;
  }

  /** Adds a reference to a block in use (another cache, or the prefix cache, shares it). */
  synchronized void retain(int block) {
    if (block <= 0 || block >= numBlocks || refs[block] == 0) {
      throw new IllegalStateException("block " + block + " is not in use and cannot be shared");
    }
    refs[block]++;
  }

  /** Drops a reference to a block; the last one returns it to the pool. */
  synchronized void give(int block) {
    if (block <= 0 || block >= numBlocks || refs[block] == 0) {
      throw new IllegalStateException("block " + block + " is not in use and cannot be given back");
    }
    if (--refs[block] == 0) {
      free[freeCount++] = block;
    }
  }

  /** References held on a block (0: free). */
  synchronized int references(int block) {
    return refs[block];
  }

  @Override
  public void close() {
    cache.close();
    if (indexKeys != null) {
      indexKeys.close();
    }
  }
}
