package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import java.util.function.BiFunction;

/**
 * Grouped-query attention over a paged bf16 KV cache ({@code gqa_attention.cu}), as Qwen3-MoE uses
 * it: per-head RMSNorm of queries and keys, rotary embedding, the append of each token's keys and
 * values, and flash-decoding attention (split-KV partials, then their combine) for any mix of
 * decode and extend tokens of different sequences.
 *
 * <p>Cache of one layer: bf16 {@code [numBlocks, blockSize, 2 * kvHeads * headDim]} ({@link
 * Shape#cacheRowWidth()} values a token, {@link Shape#cacheBytesPerToken()} bytes): a token's row
 * holds the rotated keys of the KV heads (head {@code j} at {@code j * headDim}) followed by their
 * values (head {@code j} at {@code (kvHeads + j) * headDim}). Slots, block table and token lists
 * follow the MLA cache's conventions: slot {@code = block * blockSize + pos % blockSize}, sequence
 * {@code seq}'s blocks are row {@code seq} of {@code blockTable [rows, maxBlocksPerSeq]} (i32), and
 * query token {@code t} attends causally to positions {@code 0 .. tokenPos[t]} of sequence {@code
 * tokenSeq[t]}, its own row included (append first). Queries and outputs are f32 rows {@code
 * [tokens, heads * headDim]}; query head {@code h} reads KV head {@code h / (heads / kvHeads)}.
 *
 * <p>Every launch has a grid fixed by its arguments and reads the step's data only on the device,
 * so a CUDA graph captured for a token count and split count replays for any positions, slots and
 * block tables written into the same buffers.
 */
public final class GqaAttention {
  /** Threads of every GQA kernel's block (kGqaThreads). */
  private static final int THREADS = 128;

  /** Cache positions per tile of the split kernel (kGqaTile). */
  public static final int TILE = 32;

  /** Largest head dimension the kernels take (kGqaMaxHeadDim). */
  public static final int MAX_HEAD_DIM = 256;

  /** Most query heads per KV head (kGqaMaxGroup). */
  public static final int MAX_GROUP = 16;

  /** Most values of a group's outputs, {@code group * headDim} (kGqaMaxGroupValues). */
  public static final int MAX_GROUP_VALUES = 2048;

  /** Most KV splits of one launch (the combine keeps a weight per split in shared memory). */
  public static final int MAX_SPLITS = 1024;

  /** Bf16 padding of a staged cache row (kGqaRowPad). */
  private static final int ROW_PAD = 8;

  private final Kernel normRopeAppend;
  private final Kernel split;
  private final Kernel combine;

  GqaAttention(BiFunction<String, Integer, Kernel> kernel) {
    normRopeAppend = kernel.apply("rm_gqa_qk_norm_rope_append", 18);
    split = kernel.apply("rm_gqa_decode_split", 17);
    combine = kernel.apply("rm_gqa_combine", 7);
  }

  /**
   * The attention shape of one rank: {@code heads} query heads sharing {@code kvHeads} KV heads of
   * {@code headDim} dims (Qwen3-30B-A3B: 32, 4, 128). The kernels take head dims that are multiples
   * of 8 up to {@value #MAX_HEAD_DIM}, groups ({@code heads / kvHeads}) up to {@value #MAX_GROUP}
   * with {@code group * headDim <= } {@value #MAX_GROUP_VALUES}.
   */
  public record Shape(int heads, int kvHeads, int headDim) {
    /** Rejects shapes the kernels cannot hold, saying which limit is broken. */
    public Shape {
      if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0) {
        throw new IllegalArgumentException(
            "GQA needs query heads that are a multiple of the KV heads, got "
                + heads
                + " query and "
                + kvHeads
                + " KV heads");
      }
      if (headDim < 8 || headDim % 8 != 0 || headDim > MAX_HEAD_DIM) {
        throw new IllegalArgumentException(
            "the GQA kernels take head dims that are multiples of 8 up to "
                + MAX_HEAD_DIM
                + ", got "
                + headDim);
      }
      int group = heads / kvHeads;
      if (group > MAX_GROUP || group * headDim > MAX_GROUP_VALUES) {
        throw new IllegalArgumentException(
            "the GQA kernels take up to "
                + MAX_GROUP
                + " query heads per KV head and "
                + MAX_GROUP_VALUES
                + " values per group, got "
                + group
                + " heads of "
                + headDim);
      }
    }

    /** Query heads per KV head. */
    public int group() {
      return heads / kvHeads;
    }

    /** Bf16 values of a token's cache row in one layer: keys then values of every KV head. */
    public int cacheRowWidth() {
      return 2 * kvHeads * headDim;
    }

    /** Bytes of a token's cache row in one layer. */
    public long cacheBytesPerToken() {
      return 2L * cacheRowWidth();
    }

    /** F32 values of a token's query (and output) row, {@code heads * headDim}. */
    public int queryWidth() {
      return heads * headDim;
    }
  }

  /**
   * Per-head RMSNorm, rotary embedding and cache append for {@code n} tokens in one launch: for
   * token {@code t}, query head {@code h} at {@code q + 4 * (t * qStride + h * headDim)} is
   * replaced by {@code rope(qNorm * rmsnorm(q[t, h]))} at position {@code positions[t]}, key head
   * {@code j} of {@code k} (rows {@code kStride} apart) likewise with {@code kNorm}, and the
   * rotated key and the value head {@code j} of {@code v} (rows {@code vStride} apart) are written
   * to the cache row {@code slots[t]} as bf16. Strides in floats, so {@code q}, {@code k}, {@code
   * v} may be column slices of one fused projection. {@code qNorm}, {@code kNorm}: f32 {@code
   * [headDim]}, or 0 for no norm. Rotation over the whole head: {@code invFreq [headDim / 2]} and
   * {@code attnScaling} from the host's rope table; {@code interleaved} false for Qwen's half-split
   * pairs {@code (i, i + headDim/2)}, true for DeepSeek's {@code (2i, 2i+1)} (as {@link
   * RingmasterKernels#rope}). The norm is {@link RingmasterKernels#rmsNorm}'s formula.
   */
  public void qkNormRopeAppend(
      CudaStream s,
      Shape shape,
      long q,
      int qStride,
      long k,
      int kStride,
      long v,
      int vStride,
      long qNorm,
      long kNorm,
      float eps,
      long positions,
      long invFreq,
      float attnScaling,
      boolean interleaved,
      long cache,
      long slots,
      int n) {
    Kernel f = normRopeAppend;
    f.arg(0, q).arg(1, qStride).arg(2, k).arg(3, kStride).arg(4, v).arg(5, vStride);
    f.arg(6, qNorm).arg(7, kNorm).arg(8, eps).arg(9, shape.heads()).arg(10, shape.kvHeads());
    f.arg(11, shape.headDim()).arg(12, positions).arg(13, invFreq).arg(14, attnScaling);
    f.arg(15, interleaved ? 1 : 0).arg(16, cache).arg(17, slots);
    int rowsPerToken = shape.heads() + 2 * shape.kvHeads();
    f.launch(s, n, (rowsPerToken + THREADS / 32 - 1) / (THREADS / 32), 1, THREADS, 0);
  }

  /**
   * Attention of {@code n} query tokens over the paged cache: {@code out [n, heads * headDim]} =
   * softmax(scale * q k^T) v per query head, over positions {@code 0 .. tokenPos[t]} of sequence
   * {@code tokenSeq[t]} (block-table row), the context cut into {@code splits} parts of whole
   * {@value #TILE}-position tiles (splits past a short context stay empty). With one split the
   * split kernel writes {@code out} itself (one launch); otherwise its partials go to {@code ws}
   * and a combine launch merges them ({@code ws} may be null for one split). {@code q}: f32 rows
   * {@code qStride} floats apart (rotated: {@link #qkNormRopeAppend} first). f32 throughout; the
   * cache's bf16 values exactly as stored. At most {@value #MAX_SPLITS} splits.
   */
  public void attention(
      CudaStream s,
      GqaWorkspace ws,
      Shape shape,
      long out,
      long q,
      int qStride,
      long cache,
      long blockTable,
      int maxBlocksPerSeq,
      long tokenSeq,
      long tokenPos,
      int n,
      int blockSize,
      int splits,
      float scale) {
    if (splits < 1 || splits > MAX_SPLITS || blockSize < 1) {
      throw new IllegalArgumentException(
          "GQA attention takes 1 to "
              + MAX_SPLITS
              + " splits and at least one position a block, got "
              + splits
              + " splits and blocks of "
              + blockSize);
    }
    if (splits > 1) {
      if (ws == null) {
        throw new IllegalArgumentException(
            splits + " splits need a GqaWorkspace for their partials (none was given)");
      }
      ws.check(n, splits, shape);
    }
    int heads = shape.heads();
    int kvHeads = shape.kvHeads();
    int headDim = shape.headDim();
    Kernel f = split;
    f.arg(0, out).arg(1, splits > 1 ? ws.partialOut.ptr() : 0L);
    f.arg(2, splits > 1 ? ws.partialMax.ptr() : 0L).arg(3, splits > 1 ? ws.partialSum.ptr() : 0L);
    f.arg(4, q).arg(5, qStride).arg(6, cache).arg(7, blockTable).arg(8, maxBlocksPerSeq);
    f.arg(9, tokenSeq).arg(10, tokenPos).arg(11, heads).arg(12, kvHeads).arg(13, headDim);
    f.arg(14, blockSize).arg(15, splits).arg(16, scale);
    f.launch(s, splits, kvHeads, n, THREADS, splitSharedBytes(shape));
    if (splits > 1) {
      combine.arg(0, out).arg(1, ws.partialOut.ptr()).arg(2, ws.partialMax.ptr());
      combine.arg(3, ws.partialSum.ptr()).arg(4, heads).arg(5, headDim).arg(6, splits);
      combine.launch(s, heads, n, 1, THREADS, 4 * splits);
    }
  }

  /** Dynamic shared memory of the split kernel (mirrors GqaSmem in gqa_attention.cu). */
  static int splitSharedBytes(Shape shape) {
    int group = shape.group();
    int ld = shape.headDim() + ROW_PAD;
    return 4 * group * shape.headDim() + 2 * 2 * TILE * ld + 4 * group * TILE + 2 * 4 * group;
  }

  /**
   * KV splits for {@code tokens} queries of at most {@code maxLen} positions on {@code sms} SMs:
   * enough (token, KV head, split) blocks for about four per SM, but no split shorter than two
   * tiles, and at most {@code maxSplits} (the workspace's limit). A graph captured for a long
   * nominal context stays correct for shorter ones: the surplus splits are empty.
   */
  public static int splits(int tokens, int kvHeads, int maxLen, int sms, int maxSplits) {
    int wanted = 4 * sms / Math.max(1, kvHeads * tokens);
    int byLength = (maxLen + 2 * TILE - 1) / (2 * TILE);
    return Math.max(1, Math.min(Math.min(wanted, byLength), maxSplits));
  }
}
