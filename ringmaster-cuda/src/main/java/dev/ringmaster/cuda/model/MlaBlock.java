package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.MlaFusedDecode;
import dev.ringmaster.cuda.kernels.MlaPrefillAttention;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.model.arch.RopeTable;
import dev.ringmaster.model.config.ModelConfig;

/**
 * Multi-head latent attention on the GPU, the same steps as the CPU's {@code MlaAttention}: query
 * (optionally through the q LoRA and its norm), the KV latent and shared rotary key from {@code
 * kv_a_proj_with_mqa}, latent norm, rotary embedding, append to the paged cache, absorbed attention
 * over the cache (causal per token), output projection.
 */
final class MlaBlock {
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

  MlaBlock(ModelConfig cfg, RopeTable rope) {
    this(cfg, rope, cfg.numHeads());
  }

  /** The block of a tensor-parallel rank holding {@code heads} of the model's heads. */
  MlaBlock(ModelConfig cfg, RopeTable rope, int heads) {
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
   * Attention of {@code n} tokens: reads {@code act.normed}, writes {@code act.attnOut}; appends
   * the tokens to layer {@code layerCache} at {@code in.slots}. {@code mlaFusedTokens}: most tokens
   * for which this step takes the fused MLA launch (0: never), chosen per step by the model.
   */
  void forward(
      GpuOps ops,
      Activations act,
      StepInputs in,
      LayerWeights.MlaWeights w,
      long layerCache,
      int blockSize,
      int n,
      int splits,
      int mlaFusedTokens,
      PrefillSegments segments,
      MlaPrefillAttention prefill,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    int qk = nope + ropeDim;
    int kvWidth = kvLora + ropeDim;
    if (w.qProj() != null) {
      ops.linear2(act.q.ptr(), w.qProj(), act.kva.ptr(), w.kvA(), act.normed.ptr(), n);
    } else {
      ops.linear2(act.qa.ptr(), w.qA(), act.kva.ptr(), w.kvA(), act.normed.ptr(), n);
      ops.rmsNorm(act.qa.ptr(), act.qa.ptr(), w.qANorm(), n, w.qA().rows(), LATENT_NORM_EPS);
      ops.linear(act.q.ptr(), act.qa.ptr(), w.qB(), n);
    }
    boolean fusedAttention =
        n <= mlaFusedTokens && MlaFusedDecode.supports(nope, ropeDim, vDim, kvLora);
    // The fused attention then appends the step's cache rows itself (one launch fewer).
    MlaFusedDecode.Append append =
        fusedAttention && ops.tuning.fusedDecodeOps() && ops.tuning.mlaFusedAppend()
            ? new MlaFusedDecode.Append(
                act.kva.ptr(),
                kvWidth,
                w.kvANorm(),
                LATENT_NORM_EPS,
                act.invFreq.ptr(),
                ropeScaling,
                interleaved,
                in.slots.ptr())
            : null;
    if (append != null) {
      mark.accept("mla.q_kv");
    } else if (ops.tuning.fusedDecodeOps()) {
      k.mlaKvRopeAppend(
          ops.stream,
          act.kva.ptr(),
          kvWidth,
          w.kvANorm(),
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
      ops.rmsNormPrefix(act.kva.ptr(), kvWidth, w.kvANorm(), n, kvLora, LATENT_NORM_EPS);
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
      k.mlaCacheAppend(ops.stream, layerCache, act.kva.ptr(), kvWidth, in.slots.ptr(), n, kvWidth);
    }
    if (append == null) {
      mark.accept("mla.q_kv_rope_append");
    }
    if (fusedAttention) {
      k.mlaFusedDecode()
          .attention(
              ops.stream,
              act.attn.ptr(),
              act.q.ptr(),
              w.kvB().ptr(),
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
      k.mlaAttention(
          ops.stream,
          act.mla,
          act.attn.ptr(),
          act.q.ptr(),
          w.kvB().ptr(),
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
      prefillAttention(ops, act, in, w, layerCache, blockSize, n, splits, segments, prefill, mark);
    }
    mark.accept("mla.attention");
    ops.linear(act.attnOut.ptr(), act.attn.ptr(), w.oProj(), n);
    mark.accept("mla.o_proj");
  }

  /**
   * Attention of a prefill chunk: long runs of one sequence through the GEMM path (expanded form
   * where its scratch holds the context, else absorbed), the other tokens through the split kernels
   * (by list on tensor cores; the CUDA-core kernel takes every token). The absorbed steps (query
   * absorption, split kernels, latent output projection) run over the whole chunk only when some
   * token needs them; expanded runs then overwrite their own rows of {@code act.attn}.
   */
  private void prefillAttention(
      GpuOps ops,
      Activations act,
      StepInputs in,
      LayerWeights.MlaWeights w,
      long layerCache,
      int blockSize,
      int n,
      int splits,
      PrefillSegments segments,
      MlaPrefillAttention prefill,
      java.util.function.Consumer<String> mark) {
    RingmasterKernels k = ops.kernels;
    boolean byList = k.mlaUsesTensorCores(kvLora, ropeDim);
    int expandedMax = prefill.expandedMaxContext();
    boolean anyAbsorbedRun = false;
    for (PrefillSegments.Run r : segments.gemmRuns()) {
      anyAbsorbedRun |= r.firstPos() + r.count() > expandedMax;
    }
    if (!byList || segments.splitCount() > 0 || anyAbsorbedRun) {
      k.mlaAbsorb(
          ops.stream, act.mla, act.q.ptr(), w.kvB().ptr(), n, heads, nope, ropeDim, vDim, kvLora);
      mark.accept("mla.prefill.absorb");
      if (!byList || segments.splitCount() > 0) {
        k.mlaSplitAttention(
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
        if (r.firstPos() + r.count() > expandedMax) {
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
      k.mlaOutV(ops.stream, act.mla, act.attn.ptr(), w.kvB().ptr(), n, heads, nope, vDim, kvLora);
      mark.accept("mla.prefill.out_v");
    }
    for (PrefillSegments.Run r : segments.gemmRuns()) {
      if (r.firstPos() + r.count() <= expandedMax) {
        prefill.attendExpanded(
            ops.stream,
            k,
            ops.blas(),
            act.q.ptr(),
            w.kvB().ptr(),
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
