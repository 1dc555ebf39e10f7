package dev.ringmaster.model.arch;

import static dev.ringmaster.model.ops.Act.ATTN;
import static dev.ringmaster.model.ops.Act.ATTN_OUT;
import static dev.ringmaster.model.ops.Act.KVA;
import static dev.ringmaster.model.ops.Act.NORMED;
import static dev.ringmaster.model.ops.Act.Q;
import static dev.ringmaster.model.ops.Act.QA;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.SparseAttentionConfig;
import dev.ringmaster.model.ops.AttentionWeights;
import dev.ringmaster.model.ops.IndexerWeights;
import dev.ringmaster.model.ops.ModelOps;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.ops.WeightSource.Slice;

/**
 * DeepSeek-V3.2 and GLM-5: DeepSeek-V3's multi-head latent attention (always with the query LoRA)
 * plus DeepSeek Sparse Attention. Each layer's lightning indexer ({@code self_attn.indexer.*})
 * projects indexer queries from the normalised query LoRA ({@code wq_b}) and one key from the
 * attention input ({@code wk}, then the LayerNorm {@code k_norm}), and per-head score weights
 * ({@code weights_proj}); the attention op scores, selects and attends. GLM-5's "shared" layers
 * have no indexer and reuse the last full layer's selection. An MTP layer (layer {@code
 * num_hidden_layers} on) always has its own indexer: it runs alone, with no earlier selection to
 * share.
 *
 * <p>Under tensor parallelism the indexer is replicated on every rank, as SGLang does: the ranks
 * compute it from the same (allreduced, bit-identical) activations, so every rank selects the same
 * positions and the attention heads, split by heads as in {@link DeepseekFamily}, all read them.
 */
final class DsaFamily implements AttentionFamily {
  private final ModelConfig cfg;
  private final DeepseekFamily mla;

  DsaFamily(ModelConfig cfg) {
    this.cfg = cfg;
    this.mla = new DeepseekFamily(cfg);
  }

  @Override
  public <T> AttentionWeights<T> load(WeightSource<T> src, String p, int layer, RankContext rank) {
    AttentionWeights.Mla<T> m = (AttentionWeights.Mla<T>) mla.load(src, p, layer, rank);
    SparseAttentionConfig dsa = cfg.sparseAttention();
    boolean mtp = layer >= cfg.numLayers();
    if (!mtp && !dsa.hasIndexer(layer)) {
      return new AttentionWeights.SparseMla<>(m, null);
    }
    String ip = p + ".indexer";
    int h = cfg.hiddenSize();
    int d = dsa.indexHeadDim();
    int qRows = dsa.indexHeads() * d;
    IndexerWeights<T> idx =
        new IndexerWeights<>(
            src.linearRows(ip + ".wq_b", qRows, cfg.qLoraRank(), Slice.all(qRows), false),
            src.linearRows(ip + ".wk", d, h, Slice.all(d), false),
            src.vector(ip + ".k_norm.weight", d),
            src.vector(ip + ".k_norm.bias", d),
            src.linearRows(
                ip + ".weights_proj", dsa.indexHeads(), h, Slice.all(dsa.indexHeads()), false));
    return new AttentionWeights.SparseMla<>(m, idx);
  }

  @Override
  public <T> void forward(ModelOps<T> ops, AttentionWeights<T> weights, int layer) {
    AttentionWeights.SparseMla<T> w = (AttentionWeights.SparseMla<T>) weights;
    AttentionWeights.Mla<T> m = w.mla();
    ops.linear2(QA, m.qA(), KVA, m.kvA(), NORMED);
    ops.rmsNorm(QA, QA, m.qANorm(), DeepseekFamily.LATENT_NORM_EPS);
    ops.linear(Q, QA, m.qB());
    ops.mlaSparseAttention(m, w.indexer(), layer);
    ops.linear(ATTN_OUT, ATTN, m.oProj());
  }
}
