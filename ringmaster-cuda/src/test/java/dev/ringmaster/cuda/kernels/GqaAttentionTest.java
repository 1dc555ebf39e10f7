package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The host side of the GQA kernels: shape limits, cache row size, split choice, shared memory. */
class GqaAttentionTest {
  @Test
  void qwen3CacheRowHoldsKeysThenValuesOfEveryKvHead() {
    GqaAttention.Shape s = new GqaAttention.Shape(32, 4, 128);
    assertThat(s.group()).isEqualTo(8);
    assertThat(s.cacheRowWidth()).isEqualTo(2 * 4 * 128);
    assertThat(s.cacheBytesPerToken()).isEqualTo(2L * 2 * 4 * 128);
    assertThat(s.queryWidth()).isEqualTo(32 * 128);
  }

  @Test
  void shapesTheKernelsCannotHoldAreRefusedWithTheLimit() {
    assertThatThrownBy(() -> new GqaAttention.Shape(30, 4, 128))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("multiple of the KV heads");
    assertThatThrownBy(() -> new GqaAttention.Shape(32, 4, 100))
        .hasMessageContaining("multiples of 8 up to 256");
    assertThatThrownBy(() -> new GqaAttention.Shape(32, 4, 264))
        .hasMessageContaining("multiples of 8 up to 256");
    assertThatThrownBy(() -> new GqaAttention.Shape(32, 1, 64))
        .hasMessageContaining("up to 16 query heads per KV head");
    assertThatThrownBy(() -> new GqaAttention.Shape(16, 1, 256))
        .hasMessageContaining("2048 values per group");
  }

  @Test
  void splitSharedMemoryFitsWithoutAnOptInForEveryAdmittedShape() {
    int most = 0;
    for (int headDim = 8; headDim <= GqaAttention.MAX_HEAD_DIM; headDim += 8) {
      for (int group = 1; group <= GqaAttention.MAX_GROUP; group++) {
        if (group * headDim <= GqaAttention.MAX_GROUP_VALUES) {
          most =
              Math.max(
                  most, GqaAttention.splitSharedBytes(new GqaAttention.Shape(group, 1, headDim)));
        }
      }
    }
    assertThat(most).isLessThanOrEqualTo(48 * 1024);
  }

  @Test
  void splitsFillTheGpuWithoutSplitsShorterThanTwoTiles() {
    // Batch 1, Qwen3-30B-A3B: 4 KV heads; 132 SMs.
    assertThat(GqaAttention.splits(1, 4, 32768, 132, 256)).isEqualTo(132);
    assertThat(GqaAttention.splits(1, 4, 512, 132, 256)).isEqualTo(8);
    assertThat(GqaAttention.splits(1, 4, 32768, 132, 64)).isEqualTo(64);
    assertThat(GqaAttention.splits(128, 4, 4096, 132, 256)).isEqualTo(1);
    assertThat(GqaAttention.splits(8, 4, 1, 132, 256)).isEqualTo(1);
  }
}
