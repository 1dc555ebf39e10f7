package dev.ringmaster.model.config;

import java.util.List;

/**
 * A model's architecture and shapes, normalised from Hugging Face {@code config.json} into one form
 * for all supported families. Fields that do not apply to a family are zero (for example the MLA
 * ranks of a Qwen3-MoE model).
 *
 * @param architecture model family
 * @param vocabSize vocabulary size (rows of the embedding and LM head)
 * @param hiddenSize residual stream width
 * @param intermediateSize intermediate size of dense MLP layers
 * @param numLayers decoder layers (not counting MTP layers)
 * @param numHeads attention (query) heads
 * @param numKvHeads key/value heads (GQA); equals numHeads for MLA
 * @param headDim head size of GQA attention (Qwen3); 0 for MLA
 * @param qLoraRank rank of the query low-rank projection, 0 when the query is projected directly
 * @param kvLoraRank rank of the compressed KV latent (MLA)
 * @param qkNopeHeadDim per-head query/key dims without rotary embedding (MLA)
 * @param qkRopeHeadDim per-head query/key dims with rotary embedding (MLA; shared key part)
 * @param vHeadDim per-head value dims (MLA)
 * @param attentionBias whether attention projections have biases
 * @param rmsNormEps epsilon of every RMSNorm
 * @param tieWordEmbeddings whether the LM head reuses the embedding matrix
 * @param maxPositionEmbeddings context length the model was configured for
 * @param rope rotary embedding parameters
 * @param moe routing and expert shapes (null for a dense model)
 * @param moeLayers for each layer, whether its MLP is a mixture of experts
 * @param numNextnPredictLayers multi-token-prediction layers stored after the decoder layers
 * @param bosTokenId beginning-of-sequence token, or -1
 * @param eosTokenIds end-of-sequence tokens
 * @param quantization how the weights are quantized ({@link QuantizationConfig#NONE} when not)
 * @param sparseAttention DeepSeek Sparse Attention's indexer, or null for dense attention
 */
public record ModelConfig(
    Architecture architecture,
    int vocabSize,
    int hiddenSize,
    int intermediateSize,
    int numLayers,
    int numHeads,
    int numKvHeads,
    int headDim,
    int qLoraRank,
    int kvLoraRank,
    int qkNopeHeadDim,
    int qkRopeHeadDim,
    int vHeadDim,
    boolean attentionBias,
    double rmsNormEps,
    boolean tieWordEmbeddings,
    int maxPositionEmbeddings,
    RopeConfig rope,
    MoeConfig moe,
    List<Boolean> moeLayers,
    int numNextnPredictLayers,
    int bosTokenId,
    List<Integer> eosTokenIds,
    QuantizationConfig quantization,
    SparseAttentionConfig sparseAttention) {

  /** Query/key head size (MLA: nope + rope dims; GQA: headDim). */
  public int qkHeadDim() {
    return architecture.usesMla() ? qkNopeHeadDim + qkRopeHeadDim : headDim;
  }

  /** Value head size (MLA: vHeadDim; GQA: headDim). */
  public int valueHeadDim() {
    return architecture.usesMla() ? vHeadDim : headDim;
  }

  /** Rotary dims per head: the rope part for MLA, the whole head for GQA. */
  public int ropeDim() {
    return architecture.usesMla() ? qkRopeHeadDim : headDim;
  }

  /** Whether layer {@code layer} uses a mixture-of-experts MLP. */
  public boolean isMoeLayer(int layer) {
    return moeLayers.get(layer);
  }

  /**
   * Values cached per token per layer: the compressed latent plus the shared rope key for MLA, or
   * keys and values of all KV heads for GQA.
   */
  public int kvValuesPerTokenPerLayer() {
    return architecture.usesMla() ? kvLoraRank + qkRopeHeadDim : 2 * numKvHeads * headDim;
  }

  /**
   * Indexer key values cached per token over all layers (DeepSeek Sparse Attention: {@code
   * index_head_dim} on each layer that runs an indexer); 0 for dense attention.
   */
  public int indexerValuesPerToken() {
    return sparseAttention == null
        ? 0
        : sparseAttention.indexedLayers() * sparseAttention.indexHeadDim();
  }

  /**
   * This config with the indexer keys cached as {@code dtype} (DeepSeek Sparse Attention models;
   * the others have no indexer key cache and are returned as they are).
   *
   * @throws IllegalArgumentException where the keys cannot be stored that way ({@link
   *     SparseAttentionConfig#withKeyCache})
   */
  public ModelConfig withIndexerCache(IndexerCacheDtype dtype) {
    if (sparseAttention == null || sparseAttention.keyCache() == dtype) {
      return this;
    }
    return new ModelConfig(
        architecture,
        vocabSize,
        hiddenSize,
        intermediateSize,
        numLayers,
        numHeads,
        numKvHeads,
        headDim,
        qLoraRank,
        kvLoraRank,
        qkNopeHeadDim,
        qkRopeHeadDim,
        vHeadDim,
        attentionBias,
        rmsNormEps,
        tieWordEmbeddings,
        maxPositionEmbeddings,
        rope,
        moe,
        moeLayers,
        numNextnPredictLayers,
        bosTokenId,
        eosTokenIds,
        quantization,
        sparseAttention.withKeyCache(dtype));
  }
}
