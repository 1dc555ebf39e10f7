package dev.ringmaster.sim.model;

import java.util.List;

/**
 * The shapes the simulator needs from a model, one form for every family.
 *
 * @param modelType the config.json {@code model_type}
 * @param vocabSize vocabulary size
 * @param hiddenSize residual width
 * @param denseIntermediateSize intermediate size of dense MLP layers
 * @param numLayers decoder layers, not counting multi-token-prediction layers
 * @param attention attention shape
 * @param moe routed/shared expert shape, or null for a dense model
 * @param moeLayers for each layer whether its MLP is a mixture of experts
 * @param indexer DSA sparse-attention indexer, or null when attention is dense
 * @param tieWordEmbeddings whether the LM head reuses the embedding
 * @param numMtpLayers multi-token-prediction layers stored after the decoder layers
 * @param engineConfig the engine's parsed configuration when the engine runs this model (its loader
 *     then names the weights), else null
 */
public record ModelShape(
    String modelType,
    int vocabSize,
    int hiddenSize,
    int denseIntermediateSize,
    int numLayers,
    AttentionShape attention,
    MoeShape moe,
    List<Boolean> moeLayers,
    IndexerShape indexer,
    boolean tieWordEmbeddings,
    int numMtpLayers,
    dev.ringmaster.model.config.ModelConfig engineConfig) {

  /** A shape the engine does not load (its weights come from the simulator's own table). */
  public ModelShape(
      String modelType,
      int vocabSize,
      int hiddenSize,
      int denseIntermediateSize,
      int numLayers,
      AttentionShape attention,
      MoeShape moe,
      List<Boolean> moeLayers,
      IndexerShape indexer,
      boolean tieWordEmbeddings,
      int numMtpLayers) {
    this(
        modelType,
        vocabSize,
        hiddenSize,
        denseIntermediateSize,
        numLayers,
        attention,
        moe,
        moeLayers,
        indexer,
        tieWordEmbeddings,
        numMtpLayers,
        null);
  }

  /**
   * Attention shape. MLA fields are zero for GQA and {@code headDim} is zero for MLA.
   *
   * @param kind MLA or GQA
   * @param numHeads query heads
   * @param numKvHeads key/value heads (GQA); equals numHeads for MLA
   * @param headDim GQA head size
   * @param qLoraRank MLA query low-rank size, 0 when the query is projected directly
   * @param kvLoraRank MLA latent size
   * @param qkNopeHeadDim MLA per-head query/key dims without rotary embedding
   * @param qkRopeHeadDim MLA rotary dims (the key's rope part is shared by all heads)
   * @param vHeadDim MLA per-head value dims
   * @param qkNorm whether GQA has per-head q/k RMSNorm weights (Qwen3)
   */
  public record AttentionShape(
      AttentionKind kind,
      int numHeads,
      int numKvHeads,
      int headDim,
      int qLoraRank,
      int kvLoraRank,
      int qkNopeHeadDim,
      int qkRopeHeadDim,
      int vHeadDim,
      boolean qkNorm) {

    /** Query/key head size. */
    public int qkHeadDim() {
      return kind == AttentionKind.MLA ? qkNopeHeadDim + qkRopeHeadDim : headDim;
    }

    /** Value head size. */
    public int valueHeadDim() {
      return kind == AttentionKind.MLA ? vHeadDim : headDim;
    }
  }

  /**
   * Mixture-of-experts shape.
   *
   * @param numExperts routed experts per MoE layer
   * @param topK routed experts per token
   * @param expertIntermediateSize intermediate size of one routed expert
   * @param sharedIntermediateSize intermediate size of the shared expert(s), 0 when none
   * @param hasCorrectionBias whether the router stores {@code e_score_correction_bias}
   */
  public record MoeShape(
      int numExperts,
      int topK,
      int expertIntermediateSize,
      int sharedIntermediateSize,
      boolean hasCorrectionBias) {}

  /**
   * DeepSeek sparse attention indexer (GLM-5, DeepSeek-V3.2): small heads score every cached token
   * and the attention then reads only the top {@code topK} tokens per query.
   *
   * @param numHeads indexer heads
   * @param headDim indexer head size (also the cached indexer key size per token)
   * @param topK tokens kept per query
   * @param fullLayers for each layer whether it runs its own indexer ("full") or reuses the
   *     previous one's selection ("shared")
   */
  public record IndexerShape(int numHeads, int headDim, int topK, List<Boolean> fullLayers) {

    /** Layers that run the indexer. */
    public int fullLayerCount() {
      return (int) fullLayers.stream().filter(b -> b).count();
    }
  }

  /** Number of MoE layers. */
  public int moeLayerCount() {
    return (int) moeLayers.stream().filter(b -> b).count();
  }

  /**
   * Whether layer {@code layer} has a mixture-of-experts MLP. Indices from {@code numLayers} on are
   * the MTP layers, shaped as the last decoder layer.
   */
  public boolean isMoeLayer(int layer) {
    return moeLayers.get(Math.min(layer, numLayers - 1));
  }

  /**
   * Whether layer {@code layer} runs a DSA indexer. An MTP layer (index {@code numLayers} on) runs
   * its own whenever the model has one.
   */
  public boolean hasIndexer(int layer) {
    if (indexer == null) {
      return false;
    }
    return layer >= numLayers || indexer.fullLayers().get(layer);
  }
}
