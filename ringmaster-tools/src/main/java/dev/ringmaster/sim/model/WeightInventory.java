package dev.ringmaster.sim.model;

import dev.ringmaster.sim.model.ModelShape.AttentionShape;
import dev.ringmaster.sim.model.ModelShape.IndexerShape;
import dev.ringmaster.sim.model.ModelShape.MoeShape;
import java.util.ArrayList;
import java.util.List;

/**
 * Every weight of a model's main body, per layer, with the names and shapes of the Hugging Face
 * checkpoint; the multi-token-prediction (MTP) layers are listed apart ({@link #mtp()}), since
 * neither the engine nor the published totals count them.
 *
 * <p>For a model the engine runs ({@link ModelShape#engineConfig()} set) the main body's weights
 * are the engine loader's own requests ({@link LoaderWeights}): the names, shapes and rank splits
 * the CPU loader and the GPU uploader use. The table below serves the shapes the engine does not
 * load (dense Llama-style models, GLM-5 configs read by the simulator's parser, draft models) and
 * the MTP layers; a test keeps it equal to the loader's for every family the engine runs.
 */
public final class WeightInventory {
  private final ModelShape shape;
  private final LoaderWeights loaded;

  /** Inventory of {@code shape}. */
  public WeightInventory(ModelShape shape) {
    this.shape = shape;
    this.loaded = shape.engineConfig() == null ? null : LoaderWeights.of(shape.engineConfig());
  }

  /** Whether the main body's weights come from the engine's loader rather than the table. */
  public boolean fromEngineLoader() {
    return loaded != null;
  }

  /** The shape this inventory describes. */
  public ModelShape shape() {
    return shape;
  }

  /** Weights of the embedding (first) and the final norm plus LM head (last). */
  public List<Weight> embedding() {
    return loaded != null ? loaded.embedding() : tableEmbedding();
  }

  /** The table's embedding. */
  List<Weight> tableEmbedding() {
    return List.of(
        new Weight(
            "model.embed_tokens",
            shape.vocabSize(),
            shape.hiddenSize(),
            1,
            Role.EMBEDDING,
            Split.VOCAB));
  }

  /** The final norm and the LM head (absent when tied: the embedding is reused). */
  public List<Weight> head() {
    return loaded != null ? loaded.head() : tableHead();
  }

  /** The table's final norm and LM head. */
  List<Weight> tableHead() {
    List<Weight> out = new ArrayList<>();
    out.add(vector("model.norm", shape.hiddenSize()));
    if (!shape.tieWordEmbeddings()) {
      out.add(
          new Weight(
              "lm_head", shape.vocabSize(), shape.hiddenSize(), 1, Role.LM_HEAD, Split.VOCAB));
    }
    return out;
  }

  /** Attention weights of one layer (norms, projections and the DSA indexer when present). */
  public List<Weight> attention(int layer) {
    if (loaded != null && layer < shape.numLayers()) {
      return loaded.attention().getOrDefault(layer, List.of());
    }
    return tableAttention(layer);
  }

  /** The table's attention weights of one layer. */
  List<Weight> tableAttention(int layer) {
    List<Weight> out = new ArrayList<>();
    String p = "model.layers." + layer + ".self_attn.";
    AttentionShape a = shape.attention();
    int h = shape.hiddenSize();
    out.add(vector("model.layers." + layer + ".input_layernorm", h));
    if (a.kind() == AttentionKind.MLA) {
      if (a.qLoraRank() > 0) {
        out.add(proj(p + "q_a_proj", a.qLoraRank(), h, Split.REPLICATED));
        out.add(vector(p + "q_a_layernorm", a.qLoraRank()));
        out.add(
            proj(p + "q_b_proj", (long) a.numHeads() * a.qkHeadDim(), a.qLoraRank(), Split.COLUMN));
      } else {
        out.add(proj(p + "q_proj", (long) a.numHeads() * a.qkHeadDim(), h, Split.COLUMN));
      }
      out.add(
          proj(p + "kv_a_proj_with_mqa", a.kvLoraRank() + a.qkRopeHeadDim(), h, Split.REPLICATED));
      out.add(vector(p + "kv_a_layernorm", a.kvLoraRank()));
      out.add(
          proj(
              p + "kv_b_proj",
              (long) a.numHeads() * (a.qkNopeHeadDim() + a.vHeadDim()),
              a.kvLoraRank(),
              Split.COLUMN));
      out.add(proj(p + "o_proj", h, (long) a.numHeads() * a.vHeadDim(), Split.ROW));
    } else {
      int hd = a.headDim();
      out.add(proj(p + "q_proj", (long) a.numHeads() * hd, h, Split.COLUMN));
      out.add(proj(p + "k_proj", (long) a.numKvHeads() * hd, h, Split.COLUMN));
      out.add(proj(p + "v_proj", (long) a.numKvHeads() * hd, h, Split.COLUMN));
      out.add(proj(p + "o_proj", h, (long) a.numHeads() * hd, Split.ROW));
      if (a.qkNorm()) {
        out.add(vector(p + "q_norm", hd));
        out.add(vector(p + "k_norm", hd));
      }
    }
    if (shape.hasIndexer(layer)) {
      IndexerShape ix = shape.indexer();
      String q = p + "indexer.";
      out.add(
          new Weight(
              q + "wq_b",
              (long) ix.numHeads() * ix.headDim(),
              a.qLoraRank(),
              1,
              Role.INDEXER_PROJ,
              Split.REPLICATED));
      out.add(new Weight(q + "wk", ix.headDim(), h, 1, Role.INDEXER_PROJ, Split.REPLICATED));
      // LayerNorm of the indexer key: weight and bias.
      out.add(new Weight(q + "k_norm", 1, 2L * ix.headDim(), 1, Role.NORM, Split.REPLICATED));
      out.add(
          new Weight(q + "weights_proj", ix.numHeads(), h, 1, Role.INDEXER_PROJ, Split.REPLICATED));
    }
    return out;
  }

  /** MLP weights of one layer (post-attention norm, dense MLP or router plus experts). */
  public List<Weight> mlp(int layer) {
    if (loaded != null && layer < shape.numLayers()) {
      return loaded.mlp().getOrDefault(layer, List.of());
    }
    return tableMlp(layer);
  }

  /** The table's MLP weights of one layer. */
  List<Weight> tableMlp(int layer) {
    List<Weight> out = new ArrayList<>();
    String p = "model.layers." + layer + ".mlp.";
    int h = shape.hiddenSize();
    out.add(vector("model.layers." + layer + ".post_attention_layernorm", h));
    if (!shape.isMoeLayer(layer)) {
      addMlp(out, p, h, shape.denseIntermediateSize(), 1, Role.DENSE_MLP, false);
      return out;
    }
    MoeShape m = shape.moe();
    out.add(new Weight(p + "gate", m.numExperts(), h, 1, Role.ROUTER, Split.REPLICATED));
    if (m.hasCorrectionBias()) {
      out.add(
          new Weight(
              p + "gate.e_score_correction_bias",
              1,
              m.numExperts(),
              1,
              Role.NORM,
              Split.REPLICATED));
    }
    addMlp(
        out,
        p + "experts.",
        h,
        m.expertIntermediateSize(),
        m.numExperts(),
        Role.ROUTED_EXPERT,
        true);
    if (m.sharedIntermediateSize() > 0) {
      addMlp(
          out, p + "shared_experts.", h, m.sharedIntermediateSize(), 1, Role.SHARED_EXPERT, false);
    }
    return out;
  }

  /** All weights of the main model. */
  public List<Weight> all() {
    List<Weight> out = new ArrayList<>(embedding());
    for (int l = 0; l < shape.numLayers(); l++) {
      out.addAll(attention(l));
      out.addAll(mlp(l));
    }
    out.addAll(head());
    return out;
  }

  /** The table's weights of the main model, whatever the shape (for checking it). */
  List<Weight> tableAll() {
    List<Weight> out = new ArrayList<>(tableEmbedding());
    for (int l = 0; l < shape.numLayers(); l++) {
      out.addAll(tableAttention(l));
      out.addAll(tableMlp(l));
    }
    out.addAll(tableHead());
    return out;
  }

  /** Total parameters of the main model (embedding and LM head included). */
  public long totalParameters() {
    return all().stream().mapToLong(Weight::parameters).sum();
  }

  /**
   * Parameters one token of the main model touches, routed experts scaled by {@code topK /
   * numExperts}; {@code count} says whether the LM head is included (the embedding never is: a
   * token reads one row of it).
   */
  public double activeParameters(ActiveCount count) {
    return active(all(), count);
  }

  /**
   * Weights of the MTP layers ({@code num_nextn_predict_layers}, stored as layers {@code
   * numLayers..}): per layer the embedding and hidden-state norms, {@code eh_proj} (h x 2h), one
   * decoder layer shaped as the last one and the norm before the head. The embedding and LM head
   * the MTP layers use are the main model's and are not listed again.
   */
  public List<Weight> mtp() {
    List<Weight> out = new ArrayList<>();
    int h = shape.hiddenSize();
    for (int l = shape.numLayers(); l < shape.numLayers() + shape.numMtpLayers(); l++) {
      String p = "model.layers." + l + ".";
      out.add(vector(p + "enorm", h));
      out.add(vector(p + "hnorm", h));
      out.add(new Weight(p + "eh_proj", h, 2L * h, 1, Role.DENSE_MLP, Split.REPLICATED));
      out.addAll(attention(l));
      out.addAll(mlp(l));
      out.add(vector(p + "shared_head.norm", h));
    }
    return out;
  }

  /** Parameters of the MTP layers, not counting the embedding and LM head they share. */
  public long mtpParameters() {
    return mtp().stream().mapToLong(Weight::parameters).sum();
  }

  /** Parameters one token touches in the MTP layers (routed experts scaled by k/E). */
  public double mtpActiveParameters() {
    return active(mtp(), ActiveCount.DECODER_ONLY);
  }

  private double active(List<Weight> weights, ActiveCount count) {
    double sum = 0;
    for (Weight w : weights) {
      if (w.role() == Role.EMBEDDING
          || (w.role() == Role.LM_HEAD && count == ActiveCount.DECODER_ONLY)) {
        continue;
      }
      sum +=
          w.role() == Role.ROUTED_EXPERT
              ? (double) w.parameters() * shape.moe().topK() / shape.moe().numExperts()
              : w.parameters();
    }
    return sum;
  }

  /** Bytes of the whole model in a quantisation scheme. */
  public double totalBytes(QuantScheme q) {
    return all().stream().mapToDouble(w -> w.bytes(q)).sum();
  }

  private static void addMlp(
      List<Weight> out, String p, int h, int inter, int count, Role role, boolean experts) {
    Split col = experts ? Split.EXPERT : Split.COLUMN;
    Split row = experts ? Split.EXPERT : Split.ROW;
    out.add(new Weight(p + "gate_proj", inter, h, count, role, col));
    out.add(new Weight(p + "up_proj", inter, h, count, role, col));
    out.add(new Weight(p + "down_proj", h, inter, count, role, row));
  }

  private static Weight proj(String name, long rows, long cols, Split split) {
    return new Weight(name, rows, cols, 1, Role.ATTENTION_PROJ, split);
  }

  private static Weight vector(String name, long n) {
    return new Weight(name, 1, n, 1, Role.NORM, Split.REPLICATED);
  }
}
