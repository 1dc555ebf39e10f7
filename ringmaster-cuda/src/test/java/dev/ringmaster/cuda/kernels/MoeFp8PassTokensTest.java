package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The pass size of the FP8 tensor-core experts (no GPU): the 8-token kernels up to {@link
 * MoeKernels#MOE_MMA_FP8_NARROW_PAIRS_PER_EXPERT} routed pairs per expert on average, the 32-token
 * ones beyond.
 */
class MoeFp8PassTokensTest {
  @Test
  void narrowPassesUpToSixPairsPerExpert() {
    // V2-Lite: 64 experts, top-6; decode batches 8 and 32 take the 8-token kernels.
    assertThat(MoeKernels.moeMmaFp8PassTokens(8, 6, 64)).isEqualTo(8);
    assertThat(MoeKernels.moeMmaFp8PassTokens(32, 6, 64)).isEqualTo(8);
    assertThat(MoeKernels.moeMmaFp8PassTokens(64, 6, 64)).isEqualTo(8);
    assertThat(MoeKernels.moeMmaFp8PassTokens(65, 6, 64)).isEqualTo(32);
    assertThat(MoeKernels.moeMmaFp8PassTokens(4096, 6, 64)).isEqualTo(32);
    // DeepSeek-V3: 256 experts, top-8.
    assertThat(MoeKernels.moeMmaFp8PassTokens(192, 8, 256)).isEqualTo(8);
    assertThat(MoeKernels.moeMmaFp8PassTokens(193, 8, 256)).isEqualTo(32);
  }

  @Test
  void otherPassSizesAreRefusedByName() {
    assertThatThrownBy(
            () ->
                new MoeKernels((name, args) -> null, dev.ringmaster.runtime.KernelTuning.defaults())
                    .moeExpertPairsFp8(null, null, 0, 0, 0, 0, 0, 0, 0, 1, 64, 64, true, false, 16))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("8 or 32 tokens, got 16");
  }
}
