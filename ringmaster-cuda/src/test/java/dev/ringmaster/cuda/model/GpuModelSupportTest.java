package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** What the GPU backend refuses before loading anything (no GPU needed). */
class GpuModelSupportTest {
  private static ModelConfig config(String fixtures, String name) {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      Path f = p.resolve("fixtures").resolve(fixtures).resolve(name);
      if (Files.isDirectory(f)) {
        return ModelConfigParser.parse(f);
      }
    }
    throw new IllegalStateException("fixtures/" + fixtures + "/" + name + " not found");
  }

  @Test
  void fp8BlockAndNvfp4CheckpointsAreAccepted() {
    assertThatCode(() -> GpuModelSupport.check(config("quantized", "deepseek_v3_nvfp4")))
        .doesNotThrowAnyException();
    assertThatCode(() -> GpuModelSupport.check(config("quantized", "deepseek_v3_fp8")))
        .doesNotThrowAnyException();
  }

  @Test
  void sparseAttentionModelsRunOnOneGpuAndAreRefusedUnderTensorParallelism() {
    for (String name : new String[] {"deepseek_v32_dsa", "glm_moe_dsa_shared"}) {
      assertThatCode(() -> GpuModelSupport.check(config("golden", name)))
          .as(name)
          .doesNotThrowAnyException();
      assertThatThrownBy(() -> GpuModelSupport.checkParallel(config("golden", name)))
          .as(name)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("DeepSeek Sparse Attention")
          .hasMessageContaining("--tp-size 1");
    }
    assertThatCode(() -> GpuModelSupport.checkParallel(config("golden", "deepseek_v3_bf16")))
        .doesNotThrowAnyException();
  }

  @Test
  void gqaHeadSizesTheKernelsCannotTakeAreRefused() {
    assertThatThrownBy(() -> GpuModelSupport.check(config("golden", "qwen3_moe_untied")))
        .hasMessageContaining("head dims that are multiples of 8");
  }

  @Test
  void supportedModelsPass() {
    for (String name :
        new String[] {"deepseek_v3_bf16", "deepseek_v2_sharded", "qwen3_moe_basic"}) {
      assertThatCode(() -> GpuModelSupport.check(config("golden", name)))
          .as(name)
          .doesNotThrowAnyException();
    }
  }
}
