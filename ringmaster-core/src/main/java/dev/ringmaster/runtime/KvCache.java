package dev.ringmaster.runtime;

import dev.ringmaster.model.config.ModelConfig;
import java.util.Arrays;
import java.util.List;

/**
 * The attention cache of one sequence on the CPU, per layer two row-major arrays indexed by
 * position. For MLA they hold the compressed latent ({@code kv_lora_rank} values, after its norm)
 * and the shared rotary key ({@code qk_rope_head_dim}, after rotation) — the absorbed-form cache,
 * not per-head keys and values. For GQA they hold keys (after norm and rotation) and values. Models
 * with DeepSeek Sparse Attention also cache, on each layer that runs an indexer, the indexer key
 * ({@code index_head_dim} values, after its LayerNorm and rotation) in an {@link IndexerKeyCache}:
 * f32 rows, or FP8 codes with one scale per position when the model's config asks for them.
 *
 * <p>A backend that keeps the cache elsewhere (the GPU's paged latent cache) wraps its per-sequence
 * storage as {@link External} with {@link #ofExternal}: the cache then tracks length and capacity
 * and forwards {@link #ensureCapacity} and {@link #close} to the storage, and has no heap arrays.
 * {@link #close} releases the storage (GPU blocks go back to their pool); for heap caches it is a
 * no-op, so callers can always close a cache they are done with.
 *
 * <p>Prefix caching shares whole pages ({@code pageSize} consecutive positions) between caches:
 * {@link #retainPage} takes a {@link Page} handle that keeps one page's contents alive on its own,
 * and {@link #attachPages} makes an empty cache start with the contents of such pages. Heap caches
 * copy the rows; sharded caches compose one page per shard; external caches delegate to their
 * backend (the GPU's storage is the block itself).
 *
 * <p>A cache made with a {@link KvBlockAllocator} (the scheduler's, or a GPU model's own) holds a
 * {@link KvBlockTable}: its positions' block ids, taken as it grows ({@link #reserve} or {@link
 * #ensureCapacity}), and a retained page is a reference on its block, so the allocator's counts are
 * the memory the caches and the prefix cache hold. A sharded cache holds one table for all its
 * shards (every rank uses the same ids); its shards hold none. A heap cache made without an
 * allocator takes no block ids (a model used on its own, or a rank's shard).
 */
public final class KvCache implements AutoCloseable {
  /**
   * Per-sequence cache storage owned by a backend outside the Java heap (for example the block
   * table of a sequence in a GPU's paged cache).
   */
  public interface External extends AutoCloseable {
    /** Makes room for {@code tokens} positions; throws when the backend has no room left. */
    void ensureCapacity(int tokens);

    /** Returns the storage to its backend; idempotent. */
    @Override
    void close();

    /**
     * Takes the block ids for {@code tokens} positions without touching the storage (see {@link
     * KvCache#reserve}); for storage that wraps another cache.
     */
    default void reserve(int tokens) {
      throw new UnsupportedOperationException(
          getClass().getSimpleName() + " takes no KV block ids; make the cache with an allocator");
    }

    /** Blocks the storage's table holds (see {@link KvCache#blockCount}). */
    default int blockCount() {
      throw new UnsupportedOperationException(
          getClass().getSimpleName() + " takes no KV block ids; make the cache with an allocator");
    }

    /** Drops the blocks past {@code tokens} positions (see {@link KvCache#truncateBlocks}). */
    default int truncateBlocks(int tokens) {
      throw new UnsupportedOperationException(
          getClass().getSimpleName() + " takes no KV block ids; make the cache with an allocator");
    }

    /**
     * A handle on page {@code pageIndex} (positions {@code [pageIndex * pageSize, (pageIndex + 1) *
     * pageSize)}) that keeps its contents alive after this storage is closed.
     *
     * @throws UnsupportedOperationException when the backend cannot share pages
     */
    default Page retainPage(int pageIndex, int pageSize) {
      throw new UnsupportedOperationException(
          getClass().getSimpleName() + " cannot share KV pages; run with --disable-radix-cache");
    }

    /**
     * Makes the pages the first positions of this storage, which holds nothing yet.
     *
     * @throws UnsupportedOperationException when the backend cannot share pages
     */
    default void attachPages(List<Page> pages, int pageSize) {
      throw new UnsupportedOperationException(
          getClass().getSimpleName() + " cannot share KV pages; run with --disable-radix-cache");
    }
  }

  /**
   * A reference to the keys and values of one page of positions, owned by the backend that made it
   * ({@link #retainPage}); it stays valid whatever happens to the cache it came from. {@link
   * #close} drops this reference (idempotent); the backend frees the page when none is left.
   */
  public interface Page extends AutoCloseable {
    @Override
    void close();
  }

  /** A heap page: per layer a copy of the page's rows of {@code a} and {@code b}, and its keys. */
  private record HeapPage(float[][] a, float[][] b, IndexerKeyCache.Rows keys) implements Page {
    @Override
    public void close() {
      // the rows are plain heap memory: the collector frees them with the last handle
    }
  }

  /**
   * A page of a cache with a block table: one reference on its block, and the storage's own page
   * ({@code payload}); closing drops both, once.
   */
  private static final class BlockPage implements Page {
    private final KvBlockAllocator allocator;
    private final int id;
    private final Page payload;
    private boolean closed;

    BlockPage(KvBlockAllocator allocator, int id, Page payload) {
      this.allocator = allocator;
      this.id = id;
      this.payload = payload;
    }

    @Override
    public synchronized void close() {
      if (!closed) {
        closed = true;
        try {
          payload.close();
        } finally {
          allocator.release(id);
        }
      }
    }

    synchronized boolean isClosed() {
      return closed;
    }
  }

  /** A sharded cache's page: one page per shard, closed together. */
  private record ShardedPage(Page[] shards) implements Page {
    @Override
    public void close() {
      for (Page p : shards) {
        p.close();
      }
    }
  }

  private final int widthA;
  private final int widthB;
  private final float[][] a;
  private final float[][] b;
  private final IndexerKeyCache indexer; // null without sparse attention
  private final KvCache[] shards;
  private final External external;
  private final KvBlockTable blocks;
  private int capacity;
  private int length;

  /** An empty cache for a model that takes no block ids. */
  public KvCache(ModelConfig cfg) {
    this(cfg, null);
  }

  /**
   * An empty cache for a model whose block ids come from {@code allocator} (null: it takes none).
   */
  public KvCache(ModelConfig cfg, KvBlockAllocator allocator) {
    this(
        cfg.numLayers(),
        cfg.architecture().usesMla() ? cfg.kvLoraRank() : cfg.numKvHeads() * cfg.headDim(),
        cfg.architecture().usesMla() ? cfg.qkRopeHeadDim() : cfg.numKvHeads() * cfg.headDim(),
        cfg.sparseAttention() == null ? 0 : cfg.sparseAttention().indexHeadDim(),
        indexedLayers(cfg),
        cfg.sparseAttention() != null && cfg.sparseAttention().fp8Keys(),
        allocator);
  }

  /** An empty cache with explicit row widths that takes no block ids (a tensor-parallel shard). */
  public KvCache(int layers, int widthA, int widthB) {
    this(layers, widthA, widthB, null);
  }

  /**
   * An empty cache with explicit row widths whose block ids come from {@code allocator} (null: it
   * takes none).
   */
  public KvCache(int layers, int widthA, int widthB, KvBlockAllocator allocator) {
    this(layers, widthA, widthB, 0, null, false, allocator);
  }

  private KvCache(
      int layers,
      int widthA,
      int widthB,
      int widthC,
      boolean[] indexed,
      boolean fp8Keys,
      KvBlockAllocator allocator) {
    this.widthA = widthA;
    this.widthB = widthB;
    this.a = new float[layers][0];
    this.b = new float[layers][0];
    this.indexer = indexed == null ? null : new IndexerKeyCache(indexed, widthC, fp8Keys);
    this.shards = null;
    this.external = null;
    this.blocks = allocator == null ? null : allocator.newTable();
  }

  /**
   * An empty one-layer cache for {@code cfg}'s MTP layer, taking no block ids: the MLA latent and
   * rotary key, plus the layer's indexer keys when the model has DeepSeek Sparse Attention (an MTP
   * layer always runs its own indexer), or all KV heads for GQA.
   */
  public static KvCache forMtpLayer(ModelConfig cfg) {
    if (!cfg.architecture().usesMla()) {
      int width = cfg.numKvHeads() * cfg.headDim();
      return new KvCache(1, width, width);
    }
    boolean sparse = cfg.sparseAttention() != null;
    return new KvCache(
        1,
        cfg.kvLoraRank(),
        cfg.qkRopeHeadDim(),
        sparse ? cfg.sparseAttention().indexHeadDim() : 0,
        sparse ? new boolean[] {true} : null,
        sparse && cfg.sparseAttention().fp8Keys(),
        null);
  }

  private static boolean[] indexedLayers(ModelConfig cfg) {
    if (cfg.sparseAttention() == null) {
      return null;
    }
    boolean[] out = new boolean[cfg.numLayers()];
    for (int l = 0; l < out.length; l++) {
      out[l] = cfg.sparseAttention().hasIndexer(l);
    }
    return out;
  }

  private KvCache(KvCache[] shards, External external, KvBlockTable blocks) {
    this.widthA = 0;
    this.widthB = 0;
    this.a = null;
    this.b = null;
    this.indexer = null;
    this.shards = shards == null ? null : shards.clone();
    this.external = external;
    this.blocks = blocks;
  }

  /** A cache whose storage a backend owns (see {@link External}), taking no block ids. */
  public static KvCache ofExternal(External storage) {
    return new KvCache(null, java.util.Objects.requireNonNull(storage), null);
  }

  /**
   * A cache whose storage a backend owns and whose block ids are {@code blocks}, which the cache
   * owns from now on (closing the cache closes it); the storage reads the ids from it.
   */
  public static KvCache ofExternal(External storage, KvBlockTable blocks) {
    return new KvCache(
        null, java.util.Objects.requireNonNull(storage), java.util.Objects.requireNonNull(blocks));
  }

  /** This cache's block table, or null when it takes no block ids (its shards' caches, say). */
  public KvBlockTable blockTable() {
    return blocks;
  }

  /**
   * Takes the block ids {@code tokens} positions need, without growing the storage (which the step
   * that writes them does): the scheduler reserves a step's blocks before it plans it, so a full
   * allocator fails there and never inside a step. Safe while a step runs on this cache.
   *
   * @throws IllegalStateException when the allocator is short (nothing is taken)
   */
  public void reserve(int tokens) {
    if (blocks != null) {
      blocks.ensure(tokens);
    } else if (external != null) {
      external.reserve(tokens);
    } else {
      throw untracked();
    }
  }

  /** Blocks this cache's table holds (shared prefix-cache blocks included). */
  public int blockCount() {
    if (blocks != null) {
      return blocks.count();
    }
    if (external != null) {
      return external.blockCount();
    }
    throw untracked();
  }

  /**
   * Gives back the blocks past those {@code tokens} positions need (the drafts a verify step
   * rejected); returns how many went. The storage is left as it is.
   */
  public int truncateBlocks(int tokens) {
    if (blocks != null) {
      return blocks.truncate(tokens);
    }
    if (external != null) {
      return external.truncateBlocks(tokens);
    }
    throw untracked();
  }

  private static IllegalStateException untracked() {
    return new IllegalStateException(
        "this KV cache takes no block ids; make it with the scheduler's allocator"
            + " (LanguageModel.newCache(KvBlockAllocator))");
  }

  /** The backend storage of a cache made by {@link #ofExternal}, else null. */
  public External external() {
    return external;
  }

  /** Releases backend storage (and that of every shard); a no-op for heap caches. Idempotent. */
  @Override
  public void close() {
    try {
      if (external != null) {
        external.close();
      }
      if (shards != null) {
        for (KvCache s : shards) {
          s.close();
        }
      }
    } finally {
      if (blocks != null) {
        blocks.close();
      }
    }
  }

  /**
   * One sequence's cache on several ranks, taking no block ids: each rank reads and writes only its
   * shard.
   */
  public static KvCache ofShards(KvCache[] perRank) {
    return new KvCache(perRank, null, null);
  }

  /**
   * One sequence's cache on several ranks whose block ids, one set for every rank, are {@code
   * blocks} (owned by the cache from now on); the shards take none of their own.
   */
  public static KvCache ofShards(KvCache[] perRank, KvBlockTable blocks) {
    return new KvCache(perRank, null, java.util.Objects.requireNonNull(blocks));
  }

  /** Rank {@code r}'s part of a sharded cache, or this cache when it is not sharded. */
  public KvCache shard(int r) {
    return shards == null ? this : shards[r];
  }

  /**
   * Bytes per token across all layers: the f32 rows, and the indexer keys as the config stores them
   * (f32, or FP8 codes plus an f32 scale).
   */
  public static long bytesPerToken(ModelConfig cfg) {
    var dsa = cfg.sparseAttention();
    return 4L * cfg.numLayers() * cfg.kvValuesPerTokenPerLayer()
        + (dsa == null ? 0 : dsa.keyBytesPerToken(4));
  }

  /** Tokens stored. */
  public int length() {
    return length;
  }

  /** Sets the number of valid tokens (after a forward step wrote them, or to roll back). */
  public void setLength(int length) {
    if (length < 0 || length > capacity) {
      throw new IllegalArgumentException("length " + length + " outside 0.." + capacity);
    }
    this.length = length;
    if (shards != null) {
      for (KvCache s : shards) {
        s.setLength(length);
      }
    }
  }

  /**
   * Makes room for {@code tokens} positions in every layer, taking their block ids first when the
   * cache has a table (a full allocator then throws before anything changed).
   */
  public void ensureCapacity(int tokens) {
    if (blocks != null) {
      blocks.ensure(tokens);
    }
    if (external != null) {
      if (tokens > capacity) {
        external.ensureCapacity(tokens);
        capacity = tokens;
      }
      return;
    }
    if (shards != null) {
      for (KvCache s : shards) {
        s.ensureCapacity(tokens);
      }
      capacity = Math.max(capacity, tokens);
      return;
    }
    if (tokens <= capacity) {
      return;
    }
    int newCap = Math.max(tokens, Math.max(16, capacity * 2));
    for (int l = 0; l < a.length; l++) {
      a[l] = Arrays.copyOf(a[l], newCap * widthA);
      b[l] = Arrays.copyOf(b[l], newCap * widthB);
    }
    if (indexer != null) {
      indexer.grow(newCap);
    }
    capacity = newCap;
  }

  /** First array of a layer (MLA latent, or GQA keys), row-major by position. */
  public float[] a(int layer) {
    return a[layer];
  }

  /** Second array of a layer (MLA rotary key, or GQA values), row-major by position. */
  public float[] b(int layer) {
    return b[layer];
  }

  /**
   * The f32 indexer keys of a layer that runs an indexer (DeepSeek Sparse Attention), row-major by
   * position, {@link #widthC} values each ({@link IndexerKeyCache#keys}; FP8 keys are read through
   * {@link #indexerKeys}).
   */
  public float[] c(int layer) {
    return indexerKeys().keys(layer);
  }

  /**
   * The indexer keys (DeepSeek Sparse Attention).
   *
   * @throws IllegalStateException for a cache without them
   */
  public IndexerKeyCache indexerKeys() {
    if (indexer == null) {
      throw new IllegalStateException("this cache has no indexer keys");
    }
    return indexer;
  }

  /** Values per indexer key (0 without sparse attention). */
  public int widthC() {
    return indexer == null ? 0 : indexer.dim();
  }

  /** Row width of {@link #a}. */
  public int widthA() {
    return widthA;
  }

  /** Row width of {@link #b}. */
  public int widthB() {
    return widthB;
  }

  /**
   * A handle on page {@code pageIndex} of this cache (positions {@code [pageIndex * pageSize,
   * (pageIndex + 1) * pageSize)}, all of them stored), valid after this cache is closed or changed.
   */
  public Page retainPage(int pageIndex, int pageSize) {
    if (pageSize < 1 || pageIndex < 0 || (long) (pageIndex + 1) * pageSize > length) {
      throw new IllegalArgumentException(
          "page "
              + pageIndex
              + " of "
              + pageSize
              + " positions is not stored (the cache holds "
              + length
              + " positions)");
    }
    if (blocks == null) {
      return storagePage(pageIndex, pageSize);
    }
    if (pageSize != blocks.pageSize()) {
      throw new IllegalArgumentException(
          "a shared page must be one KV block: page size "
              + pageSize
              + " but blocks of "
              + blocks.pageSize()
              + " tokens; pass the same --page-size to both");
    }
    Page payload = storagePage(pageIndex, pageSize);
    try {
      return new BlockPage(blocks.allocator(), blocks.retain(pageIndex), payload);
    } catch (RuntimeException e) {
      payload.close();
      throw e;
    }
  }

  /** The storage's own handle on a page (rows, shards' pages, or the backend's). */
  private Page storagePage(int pageIndex, int pageSize) {
    if (external != null) {
      return external.retainPage(pageIndex, pageSize);
    }
    if (shards != null) {
      Page[] parts = new Page[shards.length];
      try {
        for (int r = 0; r < shards.length; r++) {
          parts[r] = shards[r].retainPage(pageIndex, pageSize);
        }
      } catch (RuntimeException e) {
        for (Page p : parts) {
          if (p != null) {
            p.close();
          }
        }
        throw e;
      }
      return new ShardedPage(parts);
    }
    int from = pageIndex * pageSize;
    float[][] pa = new float[a.length][];
    float[][] pb = new float[b.length][];
    for (int l = 0; l < a.length; l++) {
      pa[l] = Arrays.copyOfRange(a[l], from * widthA, (from + pageSize) * widthA);
      pb[l] = Arrays.copyOfRange(b[l], from * widthB, (from + pageSize) * widthB);
    }
    return new HeapPage(pa, pb, indexer == null ? null : indexer.copy(from, pageSize));
  }

  /**
   * Makes {@code pages} (made by {@link #retainPage} on caches of the same model and layout) the
   * first {@code pages.size() * pageSize} positions of this cache, which must be empty; its length
   * becomes that many positions.
   */
  public void attachPages(List<Page> pages, int pageSize) {
    if (length != 0) {
      throw new IllegalStateException(
          "pages attach only to an empty cache; this one holds " + length + " positions");
    }
    if (pageSize < 1) {
      throw new IllegalArgumentException("page size must be >= 1, got " + pageSize);
    }
    if (pages.isEmpty()) {
      return;
    }
    if (blocks == null) {
      attachStorage(pages, pageSize);
      return;
    }
    int[] ids = new int[pages.size()];
    List<Page> payloads = new java.util.ArrayList<>(pages.size());
    for (int i = 0; i < ids.length; i++) {
      if (!(pages.get(i) instanceof BlockPage bp)
          || bp.allocator != blocks.allocator()
          || bp.isClosed()) {
        throw new IllegalArgumentException(
            "page " + i + " is not an open block of this cache's KV block allocator");
      }
      ids[i] = bp.id;
      payloads.add(bp.payload);
    }
    if (pageSize != blocks.pageSize()) {
      throw new IllegalArgumentException(
          "pages of " + pageSize + " positions cannot be blocks of " + blocks.pageSize());
    }
    blocks.attach(ids);
    try {
      attachStorage(payloads, pageSize);
    } catch (RuntimeException e) {
      blocks.truncate(0);
      throw e;
    }
  }

  private void attachStorage(List<Page> pages, int pageSize) {
    int tokens = pages.size() * pageSize;
    if (external != null) {
      external.attachPages(pages, pageSize);
      capacity = Math.max(capacity, tokens);
      length = tokens;
      return;
    }
    if (shards != null) {
      for (int r = 0; r < shards.length; r++) {
        List<Page> part = new java.util.ArrayList<>(pages.size());
        for (Page p : pages) {
          if (!(p instanceof ShardedPage sp) || sp.shards().length != shards.length) {
            throw new IllegalArgumentException(
                "a page of another cache layout cannot attach to a cache of "
                    + shards.length
                    + " shards");
          }
          part.add(sp.shards()[r]);
        }
        shards[r].attachPages(part, pageSize);
      }
      capacity = Math.max(capacity, tokens);
      length = tokens;
      return;
    }
    ensureCapacity(tokens);
    for (int i = 0; i < pages.size(); i++) {
      if (!(pages.get(i) instanceof HeapPage hp)
          || hp.a().length != a.length
          || hp.a()[0].length != pageSize * widthA
          || hp.b()[0].length != pageSize * widthB
          || (hp.keys() == null) != (indexer == null)) {
        throw new IllegalArgumentException(
            "page " + i + " was not made by a heap cache of this layout and page size");
      }
      int at = i * pageSize;
      for (int l = 0; l < a.length; l++) {
        System.arraycopy(hp.a()[l], 0, a[l], at * widthA, pageSize * widthA);
        System.arraycopy(hp.b()[l], 0, b[l], at * widthB, pageSize * widthB);
      }
      if (indexer != null) {
        indexer.paste(hp.keys(), at, pageSize);
      }
    }
    length = tokens;
  }

  /**
   * Stores the new tokens of a batch into their sequences' caches for {@code layer}: token {@code
   * i}'s first row ({@code widthA} values) is read from {@code srcA} at {@code i * strideA + offA},
   * its second row from {@code srcB} at {@code i * strideB + offB}, and both are written at the
   * token's position.
   */
  public static void storeNewTokens(
      BatchLayout layout,
      KvCache[] caches,
      int layer,
      float[] srcA,
      int strideA,
      int offA,
      float[] srcB,
      int strideB,
      int offB) {
    for (int s = 0; s < layout.numSeqs(); s++) {
      KvCache cache = caches[s];
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        cache.ensureCapacity(layout.positions()[end - 1] + 1);
      }
      int wa = cache.widthA();
      int wb = cache.widthB();
      for (int i = layout.seqStart()[s]; i < end; i++) {
        int pos = layout.positions()[i];
        System.arraycopy(srcA, i * strideA + offA, cache.a(layer), pos * wa, wa);
        System.arraycopy(srcB, i * strideB + offB, cache.b(layer), pos * wb, wb);
      }
    }
  }

  /**
   * Stores the new tokens' indexer keys for {@code layer}: token {@code i}'s row ({@code widthC}
   * values) is read from {@code src} at {@code i * widthC} and written at the token's position
   * (quantized there with FP8 keys).
   */
  public static void storeIndexerKeys(
      BatchLayout layout, KvCache[] caches, int layer, float[] src) {
    for (int s = 0; s < layout.numSeqs(); s++) {
      KvCache cache = caches[s];
      int end = layout.seqStart()[s + 1];
      if (end > layout.seqStart()[s]) {
        cache.ensureCapacity(layout.positions()[end - 1] + 1);
      }
      IndexerKeyCache keys = cache.indexerKeys();
      int w = keys.dim();
      for (int i = layout.seqStart()[s]; i < end; i++) {
        keys.store(layer, layout.positions()[i], src, i * w);
      }
    }
  }
}
