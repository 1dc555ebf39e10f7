package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import dev.ringmaster.model.weights.QuantizedTensor;
import dev.ringmaster.model.weights.QuantizedTensors;
import dev.ringmaster.model.weights.WeightStore;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The host side of the GPU's FP8 block-scaled weights (CPU only): which scale rows and columns a
 * rank's slice takes, the refusal of slices that start inside a 128x128 block, the scale row of
 * each row of a stack of separately quantized parts (what {@code fp8_scale_row} computes), and the
 * refusals of the GPU backend for quantized checkpoints it does not run.
 */
class Fp8BlockLayoutTest {
  private static Path fixture(String name) {
    return Fp8CudaCausalLmGpuTest.quantizedFixture(name);
  }

  /** The dense layer's down projection of the FP8 fixture: [hidden, 144], 144 = 128 + 16. */
  private static QuantizedTensor down(WeightStore store, ModelConfig cfg) {
    QuantizedTensor q =
        QuantizedTensors.find(
            store,
            cfg.quantization(),
            "model.layers.0.mlp.down_proj.weight",
            cfg.hiddenSize(),
            cfg.intermediateSize());
    assertThat(q).as("the fixture's dense down projection is quantized").isNotNull();
    return q;
  }

  @Test
  void slicesTakeTheScaleBlocksTheyCoverAndRefuseToCutABlock() {
    Path dir = fixture("deepseek_v3_fp8");
    ModelConfig cfg = ModelConfigParser.parse(dir);
    try (WeightStore store = WeightStore.open(dir)) {
      QuantizedTensor q = down(store, cfg);
      assertThat(q.cols()).isEqualTo(144);
      assertThat(Fp8BlockLayout.scaleCols(q, 0, 144)).containsExactly(0, 2);
      assertThat(Fp8BlockLayout.scaleCols(q, 128, 16)).containsExactly(1, 1);
      assertThat(Fp8BlockLayout.scaleRows(q, 0, q.rows())).containsExactly(0, 1);
      assertThatThrownBy(() -> Fp8BlockLayout.scaleCols(q, 72, 72))
          .isInstanceOf(ModelLoadException.class)
          .hasMessageContaining("model.layers.0.mlp.down_proj.weight")
          .hasMessageContaining("column 72")
          .hasMessageContaining("--tp-size");
      assertThatThrownBy(() -> Fp8BlockLayout.scaleRows(q, 8, 8))
          .isInstanceOf(ModelLoadException.class)
          .hasMessageContaining("row 8");
    }
  }

  @Test
  void stackedPartsStartAFreshScaleRow() {
    // gate|up of 144 rows each: gate rows 0-127 block 0, 128-143 block 1; up rows start at 2.
    assertThat(Fp8BlockLayout.scaleRowOf(0, 144)).isEqualTo(0);
    assertThat(Fp8BlockLayout.scaleRowOf(127, 144)).isEqualTo(0);
    assertThat(Fp8BlockLayout.scaleRowOf(128, 144)).isEqualTo(1);
    assertThat(Fp8BlockLayout.scaleRowOf(143, 144)).isEqualTo(1);
    assertThat(Fp8BlockLayout.scaleRowOf(144, 144)).isEqualTo(2);
    assertThat(Fp8BlockLayout.scaleRowOf(272, 144)).isEqualTo(3);
    // a plain matrix is one part
    assertThat(Fp8BlockLayout.scaleRowOf(575, 576)).isEqualTo(4);
    // stacked experts: expert 3's down rows (parts of hidden = 2048) begin at scale row 48
    assertThat(Fp8BlockLayout.scaleRowOf(3L * 2048, 2048)).isEqualTo(48);
    assertThat(Fp8BlockLayout.blocks(1)).isEqualTo(1);
    assertThat(Fp8BlockLayout.blocks(128)).isEqualTo(1);
    assertThat(Fp8BlockLayout.blocks(129)).isEqualTo(2);
  }

  @Test
  void theGpuTakesFp8BlockAndNvfp4CheckpointsOnOneGpuOnly() {
    GpuModelSupport.check(ModelConfigParser.parse(fixture("deepseek_v3_fp8")));
    GpuModelSupport.check(ModelConfigParser.parse(fixture("deepseek_v3_nvfp4")));
    ModelConfig nvfp4 = ModelConfigParser.parse(fixture("deepseek_v3_nvfp4"));
    assertThatThrownBy(() -> TensorParallelCudaLm.check(nvfp4, ParallelConfig.tensor(2), 1, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("NVFP4")
        .hasMessageContaining("--tp-size 1");
    ModelConfig fp8 = ModelConfigParser.parse(fixture("deepseek_v3_fp8"));
    assertThatThrownBy(() -> TensorParallelCudaLm.check(fp8, ParallelConfig.tensor(2), 1, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("FP8")
        .hasMessageContaining("--tp-size 1");
  }
}
