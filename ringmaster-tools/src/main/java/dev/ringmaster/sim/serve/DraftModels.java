package dev.ringmaster.sim.serve;

import dev.ringmaster.sim.model.AttentionKind;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShape.AttentionShape;
import dev.ringmaster.sim.model.ModelShape.IndexerShape;
import java.util.List;

/**
 * Shapes of the draft models speculative decoding runs.
 *
 * <ul>
 *   <li>MTP: one decoder layer shaped as the target's last layer (MoE and indexer included) plus
 *       the shared LM head; its small {@code eh_proj} (2h x h) is left out.
 *   <li>EAGLE3: one Llama-style layer of the target's hidden size (heads of 128, 8 KV heads, the
 *       target's dense intermediate size) with a 32,000-token draft vocabulary; its input fusion
 *       projection is left out.
 * </ul>
 */
public final class DraftModels {
  /** EAGLE3 draft vocabulary size. */
  public static final int EAGLE3_VOCAB = 32000;

  private DraftModels() {}

  /** The draft model for an algorithm. */
  public static ModelShape draft(ModelShape target, String algorithm) {
    return algorithm.equals("MTP") ? mtp(target) : eagle3(target);
  }

  static ModelShape mtp(ModelShape t) {
    int last = t.numLayers() - 1;
    IndexerShape ix =
        t.indexer() == null
            ? null
            : new IndexerShape(
                t.indexer().numHeads(), t.indexer().headDim(), t.indexer().topK(), List.of(true));
    return new ModelShape(
        t.modelType() + "-mtp",
        t.vocabSize(),
        t.hiddenSize(),
        t.denseIntermediateSize(),
        1,
        t.attention(),
        t.moe(),
        List.of(t.isMoeLayer(last)),
        ix,
        false,
        0);
  }

  static ModelShape eagle3(ModelShape t) {
    int h = t.hiddenSize();
    int heads = Math.max(1, h / 128);
    AttentionShape att =
        new AttentionShape(AttentionKind.GQA, heads, Math.min(8, heads), 128, 0, 0, 0, 0, 0, false);
    return new ModelShape(
        "eagle3-draft",
        EAGLE3_VOCAB,
        h,
        t.denseIntermediateSize(),
        1,
        att,
        null,
        List.of(false),
        null,
        false,
        0);
  }
}
