package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.model.arch.DecoderModel;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.model.ops.MtpWeights;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.HiddenLogits;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.NextnLayer;
import java.util.Arrays;
import java.util.List;

/**
 * An MTP layer on the CPU: the target's embedding, {@link CpuModelOps#nextnInput}, the layer's
 * decoder block run as layer 0 of blocks and caches of its own ({@link DecoderModel#mtpLayer}), and
 * the target's LM head. A DeepSeek Sparse Attention model's MTP layer runs its own indexer over its
 * own cache's indexer keys.
 */
final class CpuNextnLayer implements NextnLayer {
  private final ModelConfig cfg;
  private final DecoderModel model;
  private final MtpWeights<CpuTensor> mtp;
  private final ModelWeights<CpuTensor> asModel;
  private final CpuModelOps.Blocks blocks;

  CpuNextnLayer(
      ModelConfig cfg,
      DecoderModel model,
      ModelWeights<CpuTensor> target,
      MtpWeights<CpuTensor> mtp,
      CpuKernelContext kernels) {
    this.cfg = cfg;
    this.model = model;
    this.mtp = mtp;
    this.asModel =
        new ModelWeights<>(
            target.embed(), List.of(mtp.layer()), mtp.sharedHeadNorm(), target.lmHead());
    this.blocks = new CpuModelOps.Blocks(cfg, RankContext.single(), asModel, kernels);
  }

  @Override
  public ModelConfig config() {
    return cfg;
  }

  @Override
  public KvCache newCache() {
    return KvCache.forMtpLayer(cfg);
  }

  @Override
  public HiddenLogits forward(int[] tokens, float[] hidden, KvCache cache) {
    int n = tokens.length;
    if (n == 0) {
      throw new IllegalArgumentException("an MTP step needs at least one row");
    }
    int start = cache.length();
    BatchLayout layout = BatchLayout.single(n, start);
    CpuModelOps ops =
        new CpuModelOps(blocks, tokens, layout, new KvCache[] {cache}, new int[] {n - 1});
    ops.embedding(asModel.embed());
    ops.nextnInput(mtp.enorm(), mtp.hnorm(), mtp.ehProj(), hidden);
    model.mtpLayer(ops, mtp);
    model.logits(ops, asModel);
    cache.setLength(start + n);
    return new HiddenLogits(ops.logits(), Arrays.copyOf(ops.normed(), n * cfg.hiddenSize()));
  }
}
