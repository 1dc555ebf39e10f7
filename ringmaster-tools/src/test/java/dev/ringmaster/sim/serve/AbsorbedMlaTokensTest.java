package dev.ringmaster.sim.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.Configs;
import dev.ringmaster.sim.model.ModelShape;
import org.junit.jupiter.api.Test;

/** Which tokens of a forward run through MLA's absorbed projections, as the engine plans them. */
class AbsorbedMlaTokensTest {
  private final ModelShape v2Lite = Configs.load("deepseek-v2-lite");

  @Test
  void aMixedForwardOfExpandedPromptRunsProjectsItsDecodeRowsOnly() {
    AbsorbedMlaTokens t = new AbsorbedMlaTokens(v2Lite, 1);
    assertThat(t.count(64, 576, 8128, 512, 512)).isEqualTo(64);
    assertThat(t.count(0, 0, 8192, 512, 512)).isZero();
    assertThat(t.count(127, 640, 65, 65, 512)).isEqualTo(127);
  }

  @Test
  void promptRunsBeyondTheExpandedScratchOrShorterThanAGemmRunAreProjected() {
    AbsorbedMlaTokens t = new AbsorbedMlaTokens(v2Lite, 1);
    // 512 MiB of per-head keys and values at 16 heads x (128 + 128) x 2 bf16 bytes per position
    assertThat(t.expandedMaxContext()).isEqualTo(65_536);
    assertThat(t.count(8, 576, 8184, 8184, 65_536)).isEqualTo(8);
    assertThat(t.count(8, 576, 8184, 8184, 65_600)).isEqualTo(8192);
    assertThat(t.count(0, 0, 8192, 8192, 200_000)).isEqualTo(8192);
    assertThat(t.count(4, 576, 60, 15, 512)).isEqualTo(64);
    assertThat(t.count(4, 576, 64, 16, 512)).isEqualTo(4);
    // at TP 2 a rank's eight heads fit twice the positions, capped by the GEMM path's 131,072
    assertThat(new AbsorbedMlaTokens(v2Lite, 2).expandedMaxContext()).isEqualTo(131_072);
  }

  @Test
  void sparseAttentionAndShapesWithoutTheGemmPathProjectTheWholeForward() {
    ModelShape glm5 = Configs.load("glm5");
    AbsorbedMlaTokens dsa = new AbsorbedMlaTokens(glm5, 8);
    int topK = glm5.indexer().topK();
    assertThat(dsa.count(16, topK, 4096, 512, 512)).isEqualTo(16);
    assertThat(dsa.count(16, topK + 64, 4096, 512, 512)).isEqualTo(16 + 4096);
    assertThat(dsa.count(0, 0, 4096, 4096, topK + 1)).isEqualTo(4096);

    ModelShape.AttentionShape a = v2Lite.attention();
    ModelShape odd =
        withAttention(
            v2Lite,
            new ModelShape.AttentionShape(
                a.kind(),
                a.numHeads(),
                a.numKvHeads(),
                a.headDim(),
                a.qLoraRank(),
                520,
                a.qkNopeHeadDim(),
                a.qkRopeHeadDim(),
                a.vHeadDim(),
                a.qkNorm()));
    assertThat(new AbsorbedMlaTokens(odd, 1).count(64, 576, 8128, 512, 512)).isEqualTo(8192);
  }

  @Test
  void attentionOtherThanMlaHasNoAbsorbedProjections() {
    AbsorbedMlaTokens gqa = new AbsorbedMlaTokens(Configs.load("qwen3-30b-a3b"), 1);
    assertThat(gqa.count(64, 576, 8128, 512, 512)).isZero();
  }

  private static ModelShape withAttention(ModelShape s, ModelShape.AttentionShape a) {
    return new ModelShape(
        s.modelType(),
        s.vocabSize(),
        s.hiddenSize(),
        s.denseIntermediateSize(),
        s.numLayers(),
        a,
        s.moe(),
        s.moeLayers(),
        s.indexer(),
        s.tieWordEmbeddings(),
        s.numMtpLayers());
  }
}
