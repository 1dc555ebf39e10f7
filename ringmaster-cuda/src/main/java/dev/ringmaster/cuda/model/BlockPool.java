package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.runtime.KvBlockAllocator;

/**
 * The paged KV storage of every layer: one device buffer {@code [layers, blocks, blockSize, D]} of
 * bf16 (MLA: {@code D = kv_lora_rank + qk_rope_head_dim}, the layout of the MLA kernels), indexed
 * by the block ids of a {@link KvBlockAllocator}. It keeps only the memory: which blocks are free
 * and who holds them is the allocator's. Block 0 is the padding block, which no allocator hands
 * out: padding tokens of a graph batch write and read it, so real sequences never see their values.
 *
 * <p>Models with DeepSeek Sparse Attention also hold the indexer keys of every layer that runs an
 * indexer: a second buffer {@code [indexed layers, blocks, blockSize, index_head_dim]} of bf16,
 * paged by the same block ids, so a block (and a prefix-cache page sharing it) carries both. With
 * FP8 keys ({@code --indexer-cache-dtype fp8_e4m3}) that buffer holds e4m3 codes (one byte each)
 * and a third one {@code [indexed layers, blocks, blockSize]} their f32 scales.
 *
 * <p>One allocator's caches use the storage at a time ({@link #bind}): the model's own, for use
 * without a scheduler, or the scheduler's.
 */
final class BlockPool implements AutoCloseable {
  private final DeviceBuffer cache;
  private final int layers;
  private final int numBlocks;
  private final int blockSize;
  private final int rowWidth;
  private final DeviceBuffer indexKeys; // null without sparse attention
  private final DeviceBuffer indexScales; // null unless the keys are FP8
  private final int[] indexSlot; // layer -> its slot in indexKeys, -1 for layers without indexer
  private final int indexWidth;
  private final int indexValueBytes; // 2 (bf16) or 1 (FP8 codes)
  private final KvBlockAllocator own;
  private KvBlockAllocator bound;

  BlockPool(int layers, int numBlocks, int blockSize, int rowWidth, CudaStream stream) {
    this(layers, numBlocks, blockSize, rowWidth, null, 0, false, stream);
  }

  /**
   * A pool whose layers {@code l} with {@code indexed[l]} also cache indexer keys of {@code
   * indexWidth} values ({@code indexed} null: none), as bf16 or, with {@code fp8Keys}, as e4m3
   * codes and one f32 scale per position.
   */
  BlockPool(
      int layers,
      int numBlocks,
      int blockSize,
      int rowWidth,
      boolean[] indexed,
      int indexWidth,
      boolean fp8Keys,
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
    this.indexValueBytes = fp8Keys ? 1 : 2;
    indexSlot = new int[layers];
    int slots = 0;
    for (int l = 0; l < layers; l++) {
      indexSlot[l] = indexed != null && indexed[l] ? slots++ : -1;
    }
    indexKeys = slots == 0 ? null : DeviceBuffer.allocate(slots * indexLayerBytes());
    indexScales =
        slots == 0 || !fp8Keys ? null : DeviceBuffer.allocate(4L * slots * numBlocks * blockSize);
    for (int i = 0; i < slots; i++) {
      CudaDriverAccess.memsetZero(
          indexKeys.ptr(i * indexLayerBytes()),
          (long) indexValueBytes * blockSize * indexWidth,
          stream);
      if (indexScales != null) {
        CudaDriverAccess.memsetZero(
            indexScales.ptr(4L * i * numBlocks * blockSize), 4L * blockSize, stream);
      }
    }
    own = new KvBlockAllocator(blockSize, numBlocks - 1);
    bound = own;
  }

  /**
   * Bytes one token takes in the pool of an MLA model: a bf16 latent row ({@code kv_lora_rank +
   * qk_rope_head_dim}) in every layer, and an indexer key ({@code index_head_dim} bf16 values, or
   * as many FP8 codes plus an f32 scale) in every layer that runs an indexer (DeepSeek Sparse
   * Attention).
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

  /**
   * Bytes of one token's indexer keys across the layers that run an indexer (0: none): bf16 keys,
   * or FP8 codes plus an f32 scale.
   */
  static long indexerBytesPerToken(dev.ringmaster.model.config.ModelConfig cfg) {
    var dsa = cfg.sparseAttention();
    return dsa == null ? 0 : dsa.keyBytesPerToken(2);
  }

  /** Bytes of a pool of {@code numBlocks} blocks. */
  static long bytes(int layers, long numBlocks, int blockSize, int rowWidth) {
    return 2L * layers * numBlocks * blockSize * rowWidth;
  }

  private long layerBytes() {
    return 2L * numBlocks * blockSize * rowWidth;
  }

  private long indexLayerBytes() {
    return (long) indexValueBytes * numBlocks * blockSize * indexWidth;
  }

  /**
   * Device pointer of layer {@code l}'s indexer keys {@code [blocks, blockSize, index_head_dim]}
   * (bf16, or e4m3 codes with FP8 keys); throws for a layer without an indexer.
   */
  long indexKeysPtr(int l) {
    return indexKeys.ptr() + slot(l) * indexLayerBytes();
  }

  /**
   * Device pointer of layer {@code l}'s FP8 key scales {@code [blocks, blockSize]} (f32); throws
   * for a layer without an indexer or keys in bf16.
   */
  long indexScalesPtr(int l) {
    if (indexScales == null) {
      throw new IllegalStateException("the indexer keys are bf16: they have no scales");
    }
    return indexScales.ptr() + 4L * slot(l) * numBlocks * blockSize;
  }

  /** Whether the indexer keys are e4m3 codes with f32 scales ({@link #indexScalesPtr}). */
  boolean fp8Keys() {
    return indexValueBytes == 1;
  }

  private long slot(int l) {
    if (indexKeys == null || indexSlot[l] < 0) {
      throw new IllegalStateException("layer " + l + " has no indexer key cache");
    }
    return indexSlot[l];
  }

  /** Bytes of the indexer-key cache, scales included (0 without sparse attention). */
  long indexerBytes() {
    return (indexKeys == null ? 0 : indexKeys.bytes())
        + (indexScales == null ? 0 : indexScales.bytes());
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

  /** Blocks the storage holds past the padding block: the most an allocator may hand out. */
  int usableBlocks() {
    return numBlocks - 1;
  }

  /** The allocator over all usable blocks, for caches made without a scheduler. */
  KvBlockAllocator own() {
    return own;
  }

  /**
   * Makes {@code blocks} the allocator whose ids index this storage from now on.
   *
   * @throws IllegalArgumentException when it has more blocks than the storage, or blocks of another
   *     size
   * @throws IllegalStateException when another allocator's caches still hold blocks here
   */
  synchronized void bind(KvBlockAllocator blocks) {
    if (blocks.pageSize() != blockSize) {
      throw new IllegalArgumentException(
          "the KV block allocator has blocks of "
              + blocks.pageSize()
              + " tokens but the GPU cache's are "
              + blockSize
              + "; give both the same --page-size");
    }
    if (blocks.capacity() > numBlocks - 1) {
      throw new IllegalArgumentException(
          "the KV block allocator has "
              + blocks.capacity()
              + " blocks but the GPU cache holds "
              + (numBlocks - 1)
              + " of "
              + blockSize
              + " tokens; lower --max-total-tokens or give the cache more memory"
              + " (--mem-fraction-static)");
    }
    if (blocks != bound && bound.used() > 0) {
      throw new IllegalStateException(
          "the GPU KV cache's blocks are in use by another allocator ("
              + bound.used()
              + " blocks held): close those caches and pages before starting a scheduler on"
              + " this model");
    }
    bound = blocks;
  }

  /** Blocks of the storage no cache or page of the bound allocator holds (tests). */
  synchronized int freeBlocks() {
    return numBlocks - 1 - bound.used();
  }

  @Override
  public void close() {
    cache.close();
    if (indexKeys != null) {
      indexKeys.close();
    }
    if (indexScales != null) {
      indexScales.close();
    }
  }
}
