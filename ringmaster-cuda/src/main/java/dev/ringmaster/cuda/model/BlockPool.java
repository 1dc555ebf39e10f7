package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;

/**
 * The paged latent KV cache of every layer: one device buffer {@code [layers, blocks, blockSize,
 * D]} of bf16 ({@code D = kv_lora_rank + qk_rope_head_dim}, the layout of the MLA kernels) and a
 * free list of block ids. Block 0 is never handed out: padding tokens of a graph batch write and
 * read it, so real sequences never see their values.
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
  private final int[] free;
  private final int[] refs;
  private int freeCount;

  BlockPool(int layers, int numBlocks, int blockSize, int rowWidth, CudaStream stream) {
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
    refs = new int[numBlocks];
    free = new int[numBlocks - 1];
    for (int i = 0; i < free.length; i++) {
      free[i] = numBlocks - 1 - i; // hand out low ids first
    }
    freeCount = free.length;
  }

  /**
   * Bytes one token takes in the pool of a model: a bf16 latent row ({@code kv_lora_rank +
   * qk_rope_head_dim}) in every layer.
   */
  public static long bytesPerToken(dev.ringmaster.model.config.ModelConfig cfg) {
    return bytes(cfg.numLayers(), 1, 1, cfg.kvLoraRank() + cfg.qkRopeHeadDim());
  }

  /** Bytes of a pool of {@code numBlocks} blocks. */
  static long bytes(int layers, long numBlocks, int blockSize, int rowWidth) {
    return 2L * layers * numBlocks * blockSize * rowWidth;
  }

  private long layerBytes() {
    return 2L * numBlocks * blockSize * rowWidth;
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

  /** Bytes of device memory held. */
  long bytes() {
    return cache.bytes();
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
  }
}
