package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.MlaFusedDecode;
import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;
import java.util.List;

/**
 * The GPU's multi-head latent attention op (after the query and KV down-projections, before the
 * output projection, which the architecture runs): latent norm, rotary embedding, append to the
 * paged cache and absorbed attention over the cache (causal per token). The kernels are chosen
 * here: one fused launch for short one-token steps, the split kernels for decode batches, and for
 * prefill the GEMM paths (expanded or absorbed) for long runs of one sequence.
 */
final class GpuMlaAttention {
  /** transformers builds q_a_layernorm and kv_a_layernorm with the default eps. */
  private static final float LATENT_NORM_EPS = 1e-6f;

  private final int heads;
  private final int nope;
  private final int ropeDim;
  private final int vDim;
  private final int kvLora;
  private final float scale;
  private final float ropeScaling;
  private final boolean interleaved;

  GpuMlaAttention(ModelConfig cfg, RopeTable rope) {
    this(cfg, rope, cfg.numHeads());
  }

  /** The block of a tensor-parallel rank holding {@code heads} of the model's heads. */
  GpuMlaAttention(ModelConfig cfg, RopeTable rope, int heads) {
    this.heads = heads;
    nope = cfg.qkNopeHeadDim();
    ropeDim = cfg.qkRopeHeadDim();
    vDim = cfg.vHeadDim();
    kvLora = cfg.kvLoraRank();
    double s = 1.0 / Math.sqrt(nope + ropeDim);
    if (!"default".equals(cfg.rope().type()) && cfg.rope().mscaleAllDim() != 0) {
      double m = RopeTable.yarnMscale(cfg.rope().factor(), cfg.rope().mscaleAllDim());
      s = s * m * m;
    }
    scale = (float) s;
    ropeScaling = rope.attentionScaling();
    interleaved = rope.interleaved();
  }

  /**
   * The selected positions of a sparse step: {@code sel [tokens, topK]} as {@link
   * GpuSparseAttention} writes them.
   */
  record Selection(long sel, int topK) {}

  /**
   * Attention of {@code n} tokens: reads {@code act.q} and {@code act.kva}, writes {@code
   * act.attn}; appends the tokens to layer {@code layerCache} at {@code in.slots}. {@code kvANorm}
   * is the latent norm's weight, {@code kvB} kv_b_proj. {@code mlaFusedTokens}: most tokens for
   * which the step takes the fused launch (0: never). With a {@code selection} every token attends
   * only to its selected positions (absorbed form), whatever the step's size.
   */
  void forward(
      GpuOps ops,
      Activations act,
      StepInputs in,
      long kvANorm,
      DeviceMatrix kvB,
      long layerCache,
      int blockSize,
      int n,
      int splits,
      int mlaFusedTokens,
      PrefillSegments segments,
      MlaPrefillAttention prefill,
      Selection selection,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    int qk = nope + ropeDim;
    int kvWidth = kvLora + ropeDim;
    boolean fusedAttention =
        selection == null
            && n <= mlaFusedTokens
            && MlaFusedDecode.supports(nope, ropeDim, vDim, kvLora);
    // The fused attention then appends the step's cache rows itself (one launch fewer).
    MlaFusedDecode.Append append =
        fusedAttention && ops.tuning.fusedDecodeOps() && ops.tuning.mlaFusedAppend()
            ? new MlaFusedDecode.Append(
                act.kva.ptr(),
                kvWidth,
                kvANorm,
                LATENT_NORM_EPS,
                act.invFreq.ptr(),
                ropeScaling,
                interleaved,
                in.slots.ptr())
            : null;
    if (append != null) {
      mark.accept("mla.q_kv");
    } else if (ops.tuning.fusedDecodeOps()) {
      k.mla()
          .mlaKvRopeAppend(
              ops.stream,
              act.kva.ptr(),
              kvWidth,
              kvANorm,
              LATENT_NORM_EPS,
              kvLora,
              ropeDim,
              act.q.ptr(),
              heads * qk,
              heads,
              qk,
              nope,
              in.positions.ptr(),
              act.invFreq.ptr(),
              ropeScaling,
              interleaved,
              layerCache,
              in.slots.ptr(),
              n);
    } else {
      ops.rmsNormPrefix(act.kva.ptr(), kvWidth, kvANorm, n, kvLora, LATENT_NORM_EPS);
      k.rope(
          ops.stream,
          act.kva.ptr(),
          kvWidth,
          0,
          kvLora,
          in.positions.ptr(),
          act.invFreq.ptr(),
          n,
          1,
          ropeDim,
          ropeScaling,
          interleaved);
      k.rope(
          ops.stream,
          act.q.ptr(),
          heads * qk,
          qk,
          nope,
          in.positions.ptr(),
          act.invFreq.ptr(),
          n,
          heads,
          ropeDim,
          ropeScaling,
          interleaved);
      k.mla()
          .mlaCacheAppend(
              ops.stream, layerCache, act.kva.ptr(), kvWidth, in.slots.ptr(), n, kvWidth);
    }
    if (append == null) {
      mark.accept("mla.q_kv_rope_append");
    }
    if (selection != null) {
      k.dsa()
          .sparseMlaAttention(
              ops.stream,
              act.mla,
              act.attn.ptr(),
              act.q.ptr(),
              kvB.ptr(),
              layerCache,
              in.blockTable.ptr(),
              in.maxBlocksPerSeq,
              in.tokenSeq.ptr(),
              in.positions.ptr(),
              selection.sel(),
              selection.topK(),
              n,
              heads,
              nope,
              ropeDim,
              vDim,
              kvLora,
              blockSize,
              splits,
              scale);
    } else if (fusedAttention) {
      k.mlaFusedDecode()
          .attention(
              ops.stream,
              act.attn.ptr(),
              act.q.ptr(),
              kvB.ptr(),
              layerCache,
              in.blockTable.ptr(),
              in.maxBlocksPerSeq,
              in.tokenSeq.ptr(),
              in.positions.ptr(),
              n,
              heads,
              nope,
              ropeDim,
              vDim,
              kvLora,
              blockSize,
              scale,
              append);
    } else if (segments == null || segments.gemmRuns().isEmpty()) {
      k.mla()
          .mlaAttention(
              ops.stream,
              act.mla,
              act.attn.ptr(),
              act.q.ptr(),
              kvB.ptr(),
              layerCache,
              in.blockTable.ptr(),
              in.maxBlocksPerSeq,
              in.tokenSeq.ptr(),
              in.positions.ptr(),
              n,
              heads,
              nope,
              ropeDim,
              vDim,
              kvLora,
              blockSize,
              splits,
              scale);
    } else {
      prefillAttention(
          ops, act, in, kvB, layerCache, blockSize, n, splits, segments, prefill, mark);
    }
    mark.accept("mla.attention");
  }

  /**
   * Attention of a prefill chunk: long runs of one sequence through the GEMM path (expanded form
   * where its scratch holds the context, else absorbed), the other tokens through the split kernels
   * (by list on tensor cores). The absorbed steps (query absorption, latent output projection)
   * cover only the tokens that need them: the ranges of split tokens and absorbed runs that {@code
   * segments} planned (on a mixed step, its decode rows), not the expanded prompt runs beside them.
   * The CUDA-core split kernel takes every token of the chunk, so with it every token is absorbed
   * and the expanded runs then overwrite their own rows of {@code act.attn}.
   */
  private void prefillAttention(
      GpuOps ops,
      Activations act,
      StepInputs in,
      DeviceMatrix kvB,
      long layerCache,
      int blockSize,
      int n,
      int splits,
      PrefillSegments segments,
      MlaPrefillAttention prefill,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    boolean byList = k.mla().mlaUsesTensorCores(kvLora, ropeDim);
    List<PrefillSegments.Range> absorbed =
        byList ? segments.absorbedRanges() : List.of(new PrefillSegments.Range(0, n));
    if (!absorbed.isEmpty()) {
      for (PrefillSegments.Range r : absorbed) {
        k.mla()
            .mlaAbsorbRange(
                ops.stream,
                act.mla,
                act.q.ptr(),
                kvB.ptr(),
                r.first(),
                r.count(),
                heads,
                nope,
                ropeDim,
                vDim,
                kvLora);
      }
      mark.accept("mla.prefill.absorb");
      if (!byList || segments.splitCount() > 0) {
        k.mla()
            .mlaSplitAttention(
                ops.stream,
                act.mla,
                layerCache,
                in.blockTable.ptr(),
                in.maxBlocksPerSeq,
                in.tokenSeq.ptr(),
                in.positions.ptr(),
                byList ? segments.splitListPtr() : 0,
                byList ? segments.splitCount() : n,
                heads,
                ropeDim,
                kvLora,
                blockSize,
                splits,
                scale);
        mark.accept("mla.prefill.split");
      }
      for (PrefillSegments.Run r : segments.gemmRuns()) {
        if (!r.expanded()) {
          prefill.attend(
              ops.stream,
              k,
              ops.blas(),
              act.mla,
              layerCache,
              in.blockTable.ptr() + 4L * r.seq() * in.maxBlocksPerSeq,
              in.positions.ptr(),
              r.first(),
              r.count(),
              r.firstPos(),
              blockSize,
              scale,
              mark);
        }
      }
      mark.accept("mla.prefill.absorbed_gemm");
      for (PrefillSegments.Range r : absorbed) {
        k.mla()
            .mlaOutVRange(
                ops.stream,
                act.mla,
                act.attn.ptr(),
                kvB.ptr(),
                r.first(),
                r.count(),
                heads,
                nope,
                vDim,
                kvLora);
      }
      mark.accept("mla.prefill.out_v");
    }
    for (PrefillSegments.Run r : segments.gemmRuns()) {
      if (r.expanded()) {
        prefill.attendExpanded(
            ops.stream,
            k,
            ops.blas(),
            act.q.ptr(),
            kvB.ptr(),
            act.attn.ptr(),
            layerCache,
            in.blockTable.ptr() + 4L * r.seq() * in.maxBlocksPerSeq,
            in.positions.ptr(),
            r.first(),
            r.count(),
            r.firstPos(),
            blockSize,
            scale,
            mark);
      }
    }
  }
}
