package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.model.AttentionKind;
import dev.ringmaster.sim.model.ModelShape;

/**
 * Which tokens of one eager forward the engine's GPU model runs through MLA's absorbed query and
 * output projections ({@code rm_mla_absorb_q}, {@code rm_mla_out_v}), as {@code
 * GpuMlaAttention.prefillAttention} and {@code PrefillSegments} plan them. Projected are the tokens
 * of the split kernels (decode rows, prompt runs shorter than {@value #MIN_GEMM_TOKENS} tokens or
 * with a context beyond the prefill GEMM path's {@value #PREFILL_GEMM_MAX_CONTEXT} positions) and
 * the GEMM path's absorbed runs (a context beyond what the expanded form's per-head keys and values
 * fit in {@link #EXPANDED_BYTES}); expanded prompt runs are not. Every token is projected where the
 * shape rules out the prefill GEMM path or the tensor-core split kernel (the plain MLA kernel and
 * the CUDA-core split kernel take the whole forward) and where DSA's sparse attention runs (a
 * context beyond its top-k).
 */
final class AbsorbedMlaTokens {
  /** {@code PrefillSegments.MIN_GEMM_TOKENS}: shorter runs take the split kernels. */
  static final int MIN_GEMM_TOKENS = 16;

  /** {@code CudaCausalLm.PREFILL_GEMM_MAX_CONTEXT}: longer contexts take the split kernels. */
  static final int PREFILL_GEMM_MAX_CONTEXT = 131_072;

  /** {@code MlaPrefillAttention.DEFAULT_EXPANDED_BYTES}: the expanded form's scratch. */
  static final long EXPANDED_BYTES = 512L << 20;

  private final boolean mla;
  private final boolean wholeForward;
  private final int expandedMaxContext;
  private final int sparseAbove;

  /** The plan for {@code shape} at tensor-parallel degree {@code tp}. */
  AbsorbedMlaTokens(ModelShape shape, int tp) {
    ModelShape.AttentionShape a = shape.attention();
    this.mla = a.kind() == AttentionKind.MLA;
    int kvLora = a.kvLoraRank();
    int rope = a.qkRopeHeadDim();
    boolean gemmPath = (kvLora + rope) % 8 == 0;
    boolean tensorCoreSplit = kvLora % 16 == 0 && rope % 16 == 0;
    this.wholeForward = !gemmPath || !tensorCoreSplit;
    int nope = a.qkNopeHeadDim();
    int v = a.vHeadDim();
    boolean expandable = nope > 0 && v > 0 && nope % 8 == 0 && v % 8 == 0 && rope % 8 == 0;
    long perPosition = 2L * Math.max(1, a.numHeads() / tp) * (nope + v);
    this.expandedMaxContext =
        expandable ? (int) Math.min(PREFILL_GEMM_MAX_CONTEXT, EXPANDED_BYTES / perPosition) : 0;
    this.sparseAbove = shape.indexer() == null ? Integer.MAX_VALUE : shape.indexer().topK();
  }

  /** The longest prompt context whose runs take the expanded form (0: none do). */
  int expandedMaxContext() {
    return expandedMaxContext;
  }

  /**
   * Projected tokens of a forward of {@code rows} decode rows at context {@code decodeContext} and
   * {@code prompt} prompt tokens in runs of {@code runLength} tokens that end at context {@code
   * promptContext}; 0 for attention other than MLA.
   */
  int count(int rows, int decodeContext, int prompt, int runLength, int promptContext) {
    if (!mla) {
      return 0;
    }
    int longest = Math.max(rows > 0 ? decodeContext : 0, prompt > 0 ? promptContext : 0);
    if (wholeForward || longest > sparseAbove) {
      return rows + prompt;
    }
    boolean promptAbsorbed = runLength < MIN_GEMM_TOKENS || promptContext > expandedMaxContext;
    return rows + (promptAbsorbed ? prompt : 0);
  }
}
