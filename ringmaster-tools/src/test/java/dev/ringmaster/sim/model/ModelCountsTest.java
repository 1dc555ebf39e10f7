package dev.ringmaster.sim.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.ringmaster.model.arch.CheckpointLayout;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.sim.Configs;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModelCountsTest {

  // Parameter counts of transformers 5.18 models built on the meta device from configs/*.json
  // (sum of numel over parameters); the router's e_score_correction_bias is a buffer there but a
  // checkpoint tensor here, so it is added: 58 x 256 for DeepSeek-V3, 75 x 256 for GLM-5.
  private static final long V2_LITE_TRANSFORMERS = 15_706_484_224L;
  private static final long V2_TRANSFORMERS = 235_741_434_880L;
  private static final long V3_TRANSFORMERS = 671_026_404_352L + 58L * 256;
  private static final long GLM5_TRANSFORMERS = 743_911_199_232L + 75L * 256;

  @Test
  void totalParametersMatchTransformersAndTheEngineLayout() {
    assertThat(total("deepseek-v2-lite")).isEqualTo(V2_LITE_TRANSFORMERS);
    assertThat(total("deepseek-v2")).isEqualTo(V2_TRANSFORMERS);
    assertThat(total("deepseek-v3")).isEqualTo(V3_TRANSFORMERS);
    assertThat(total("glm5")).isEqualTo(GLM5_TRANSFORMERS);
    for (String name : List.of("deepseek-v2-lite", "deepseek-v2", "deepseek-v3")) {
      long engine = CheckpointLayout.parameterCount(ModelConfigParser.parse(Configs.path(name)));
      assertThat(total(name)).as(name).isEqualTo(engine);
    }
  }

  @Test
  void totalsWithinOnePercentOfPublished() {
    // Every published total counts the embedding and the LM head and leaves the MTP layers out:
    // DeepSeek-V3's README_WEIGHTS.md gives 671B for the main model and the MTP module apart.
    assertThat(total("deepseek-v2-lite") / 1e9).isCloseTo(15.7, within(0.157));
    assertThat(total("deepseek-v2") / 1e9).isCloseTo(236, within(2.36));
    assertThat(total("deepseek-v3") / 1e9).isCloseTo(671, within(6.71));
    assertThat(total("glm5") / 1e9).isCloseTo(744, within(7.44));
  }

  @Test
  void glm5PublishedTotalLeavesTheMtpLayerOut() {
    // With its MTP layer (num_nextn_predict_layers = 1) GLM-5 counts 753.9B, 1.3% over the
    // published 744B: the figure is the main model's.
    WeightInventory glm5 = new WeightInventory(Configs.load("glm5"));
    double withMtp = (glm5.totalParameters() + glm5.mtpParameters()) / 1e9;
    assertThat(withMtp).isCloseTo(753.86, within(0.01));
    assertThat(Math.abs(withMtp / 744 - 1)).isGreaterThan(0.01);
  }

  @Test
  void deepseekV3MtpModuleMatchesItsPublishedSize() {
    // README_WEIGHTS.md: the MTP module has 11.5B unique parameters (excluding the embedding and
    // output head it shares with the main model); main model plus MTP is the 685B the checkpoint
    // is published as.
    WeightInventory v3 = new WeightInventory(Configs.load("deepseek-v3"));
    assertThat(v3.mtpParameters() / 1e9).isCloseTo(11.5, within(0.115));
    assertThat((v3.totalParameters() + v3.mtpParameters()) / 1e9).isCloseTo(685, within(6.85));
  }

  @Test
  void deepseekV3ActiveWithinOnePercentOfDeepSeeksBreakdown() {
    // README_WEIGHTS.md (first revision): "Activation parameters: 36.6B (including 0.9B for the
    // output Head)" for the main model: LM head counted, embedding not, MTP module apart. The
    // paper's "37B activated" is this figure at two significant digits.
    double active = active("deepseek-v3", ActiveCount.WITH_LM_HEAD);
    assertThat(active).isCloseTo(36.6, within(0.366));
    assertThat(Math.round(active)).isEqualTo(37);
    assertThat(active).isCloseTo(36.6256, within(0.0001));
  }

  @Test
  void glm5ActiveWithinOnePercentOfPublished() {
    // GLM-5: 744B total, 40B active, where active counts the decoder layers only (no embedding,
    // no LM head: with the head it would be 40.83B, 2.1% over).
    assertThat(active("glm5", ActiveCount.DECODER_ONLY)).isCloseTo(40, within(0.40));
    assertThat(active("glm5", ActiveCount.WITH_LM_HEAD)).isCloseTo(40.833, within(0.001));
  }

  @Test
  void deepseekV2ActiveWithinOnePercentOfPublishedWithTheHeadCounted() {
    // DeepSeek-V2 paper and model card: 236B total, "21B activated". DeepSeek's convention for
    // V3 (LM head counted, embedding not) gives 20.85B, 0.7% under; decoder layers only 20.33B
    // (3.2% under), head and embedding 21.38B (1.8% over): only DeepSeek's own convention is
    // within 1%, as for V3.
    assertThat(active("deepseek-v2", ActiveCount.WITH_LM_HEAD)).isCloseTo(21, within(0.21));
    assertThat(active("deepseek-v2", ActiveCount.WITH_LM_HEAD)).isCloseTo(20.8515, within(1e-4));
    assertThat(active("deepseek-v2", ActiveCount.DECODER_ONLY)).isCloseTo(20.3272, within(1e-4));
  }

  @Test
  void deepseekV2LiteActiveIsTwoPercentAboveItsPublishedFigure() {
    // DeepSeek-V2 paper and model card: "2.4B activated". The convention that reproduces V3's
    // documented breakdown and V2's 21B (LM head counted, embedding not) gives 2.451B, 2.1% over;
    // decoder layers only give 2.242B, 6.6% under; head and embedding 2.661B; V2-Lite has no MTP
    // layer. No consistent rounding explains both papers' figures either: rounded, 2.451B is
    // "2.5B"; truncated, V2's 20.85B would be "20B". The published 2.4B is not reachable within 1%
    // without a convention made up for this one model. Pinned so that a change in counting shows.
    double active = active("deepseek-v2-lite", ActiveCount.WITH_LM_HEAD);
    assertThat(active / 2.4 - 1).isCloseTo(0.0214, within(0.001));
    assertThat(active("deepseek-v2-lite", ActiveCount.DECODER_ONLY))
        .isCloseTo(2.2417, within(1e-4));
    assertThat(Math.abs(active("deepseek-v2-lite", ActiveCount.DECODER_ONLY) / 2.4 - 1))
        .isGreaterThan(0.01);
  }

  @Test
  void glm5ShapeFollowsTransformersConfig() {
    ModelShape g = Configs.load("glm5");
    assertThat(g.numLayers()).isEqualTo(78);
    assertThat(g.moeLayerCount()).isEqualTo(75);
    assertThat(g.attention().qLoraRank()).isEqualTo(2048);
    assertThat(g.attention().qkHeadDim()).isEqualTo(256);
    assertThat(g.attention().vHeadDim()).isEqualTo(256);
    assertThat(g.moe().numExperts()).isEqualTo(256);
    assertThat(g.moe().sharedIntermediateSize()).isEqualTo(2048);
    assertThat(g.indexer().topK()).isEqualTo(2048);
    assertThat(g.indexer().fullLayerCount()).isEqualTo(78);
  }

  @Test
  void kvBytesPerTokenByHand() {
    // MLA: (kv_lora 512 + rope 64) x 2 bytes per layer.
    assertThat(KvLayout.bytesPerToken(Configs.load("deepseek-v2-lite"), "bf16"))
        .isEqualTo(27 * 576 * 2.0);
    assertThat(KvLayout.bytesPerToken(Configs.load("deepseek-v3"), "bf16"))
        .isEqualTo(61 * 576 * 2.0);
    // fp8 latent: 512 + 4 scales x 4 bytes + 64 bf16 rope = 656.
    assertThat(KvLayout.bytesPerToken(Configs.load("deepseek-v3"), "fp8")).isEqualTo(61 * 656.0);
    // GLM-5 adds the indexer key: 128 fp8 + 4-byte scale on each of 78 layers.
    assertThat(KvLayout.bytesPerToken(Configs.load("glm5"), "bf16"))
        .isEqualTo(78 * 1152.0 + 78 * 132.0);
  }

  @Test
  void weightFormatBytesByHand() {
    // 3072 x 2048: bf16 2 B/value; fp8 1 B + 24 x 16 blocks x 4 B; nvfp4 0.5 B + 3072 x 128 + 4.
    assertThat(WeightFormat.BF16.matrixBytes(3072, 2048)).isEqualTo(12_582_912.0);
    assertThat(WeightFormat.FP8.matrixBytes(3072, 2048)).isEqualTo(6_291_456.0 + 384 * 4);
    assertThat(WeightFormat.NVFP4.matrixBytes(3072, 2048)).isEqualTo(3_145_728.0 + 3072 * 128 + 4);
  }

  @Test
  void operatorCountsByHandForV2LiteDecode() {
    ModelShape s = Configs.load("deepseek-v2-lite");
    StepOps ops =
        new StepOps(new WeightInventory(s), QuantScheme.preset("bf16"), new Sharding(1, 1));
    StepShape step = StepShape.decode(4, 1, 1000, "bf16");
    List<OpCost> layer1 = ops.layer(1, step);
    OpCost q = find(layer1, "attn.q_proj");
    assertThat(q.flops()).isEqualTo(2.0 * 4 * (16 * 192) * 2048);
    assertThat(q.bytes()).isEqualTo(16 * 192 * 2048 * 2.0);
    OpCost core = find(layer1, "attn.core");
    // absorbed MLA: 4 queries x 16 heads x 1000 tokens x 2 x (2 x 512 + 64); 4 caches of 1000 x
    // 1152 B
    assertThat(core.flops()).isEqualTo(2.0 * 4 * 16 * 1000 * (2 * 512 + 64));
    assertThat(core.bytes()).isEqualTo(4 * 1000 * 1152.0);
    OpCost up = find(layer1, "moe.experts.up_proj");
    double touched = 64 * (1 - Math.pow(1 - 6.0 / 64, 4));
    assertThat(up.bytes()).isCloseTo(touched * 1408 * 2048 * 2.0, within(1e-3));
    assertThat(up.flops()).isEqualTo(2.0 * 4 * 6 * 1408 * 2048);
  }

  @Test
  void glm5IndexerCostsAndCapsAttention() {
    ModelShape s = Configs.load("glm5");
    StepOps ops =
        new StepOps(new WeightInventory(s), QuantScheme.preset("bf16"), new Sharding(1, 1));
    List<OpCost> layer = ops.layer(10, StepShape.decode(1, 1, 100_000, "bf16"));
    OpCost idx = find(layer, "attn.indexer_topk");
    assertThat(idx.bytes()).isEqualTo(100_000 * 132.0);
    assertThat(idx.flops()).isEqualTo(2.0 * 100_000 * 32 * 129);
    OpCost core = find(layer, "attn.core");
    assertThat(core.bytes()).isEqualTo(2048 * 1152.0);
  }

  @Test
  void expectedDistinctExperts() {
    assertThat(ExpertStats.expectedDistinct(256, 8, 1)).isCloseTo(8, within(1e-9));
    assertThat(ExpertStats.expectedDistinct(256, 8, 32))
        .isCloseTo(256 * (1 - Math.pow(248.0 / 256, 32)), within(1e-9));
    assertThat(ExpertStats.expectedDistinctPerRank(256, 8, 1, 8)).isCloseTo(1, within(1e-9));
  }

  private static long total(String name) {
    return new WeightInventory(Configs.load(name)).totalParameters();
  }

  private static double active(String name, ActiveCount count) {
    return new WeightInventory(Configs.load(name)).activeParameters(count) / 1e9;
  }

  private static OpCost find(List<OpCost> ops, String name) {
    return ops.stream().filter(o -> o.name().equals(name)).findFirst().orElseThrow();
  }
}
