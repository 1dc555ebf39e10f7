package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Which steps the GPU model samples on the device and which go to the host sampler ({@link
 * SamplingCapacity#hostFallbackReason}, what {@code StepReadback} asks): constrained rows stay on
 * the device, alone or mixed with plain ones, whether their masks are ready or still pending; the
 * host takes only what the buffers cannot hold, each with its reason.
 */
class SamplingCapacityTest {
  private static final int VOCAB = 129_280;
  private static final SamplingCapacity SERVING =
      new SamplingCapacity(64, 1 << 20, 1 << 14, 20, VOCAB);

  private static int[] identity(int n) {
    int[] rows = new int[n];
    for (int i = 0; i < n; i++) {
      rows[i] = i;
    }
    return rows;
  }

  private static SamplingBatch batch(int rows, int maskedEvery) {
    SamplingBatch b = new SamplingBatch();
    for (int r = 0; r < rows; r++) {
      b.addRow(r % 2 == 0 ? 0f : 0.8f, 0, 0.95f, 0f, r, 3, 1f, 0f, 0f, r % 4 == 0 ? 5 : -1);
      if (maskedEvery > 0 && r % maskedEvery == 0) {
        if (r % 3 == 0) {
          b.setAllowedTokens(new long[] {0b101L});
        } else {
          b.setAllowedTokens(new CompletableFuture<>()); // still on a mask thread
        }
      }
    }
    return b;
  }

  @Test
  void constrainedBatchesSampleOnTheDevice() {
    assertThat(SERVING.hostFallbackReason(identity(64), batch(64, 1), VOCAB))
        .as("every row masked")
        .isNull();
    assertThat(SERVING.hostFallbackReason(identity(64), batch(64, 2), VOCAB))
        .as("masked and plain rows in one batch")
        .isNull();
    assertThat(SERVING.hostFallbackReason(identity(1), batch(1, 1), VOCAB)).isNull();
    assertThat(SERVING.hostFallbackReason(identity(5), batch(5, 0), VOCAB)).isNull();
  }

  @Test
  void theHostTakesOnlyWhatTheBuffersCannotHold() {
    SamplingCapacity noMasks = new SamplingCapacity(64, 1 << 20, 1 << 14, 20, 0);
    assertThat(noMasks.hostFallbackReason(identity(4), batch(4, 2), VOCAB))
        .contains("no allowed-token masks");
    assertThat(noMasks.hostFallbackReason(identity(4), batch(4, 0), VOCAB)).isNull();
    SamplingCapacity small = new SamplingCapacity(64, 1 << 20, 1 << 14, 20, 32_000);
    assertThat(small.hostFallbackReason(identity(4), batch(4, 1), VOCAB)).contains("32000");
    assertThat(SERVING.hostFallbackReason(identity(65), batch(65, 1), VOCAB))
        .contains("65 rows exceed");
    assertThat(SERVING.hostFallbackReason(new int[] {1, 0}, batch(2, 1), VOCAB))
        .contains("samples logits row 1");
    assertThat(SERVING.hostFallbackReason(identity(3), batch(2, 1), VOCAB))
        .contains("2 rows for 3 logits rows");
    assertThat(SERVING.hostFallbackReason(identity(2), batch(2, 0), DeviceSampler.MAX_VOCAB + 1))
        .contains("vocabulary");

    SamplingBatch logprobs = new SamplingBatch();
    logprobs.addRow(1f, 0, 1f, 0f, 1, 0, 1f, 0f, 0f, 21);
    assertThat(SERVING.hostFallbackReason(identity(1), logprobs, VOCAB))
        .contains("21 top logprobs");

    SamplingCapacity tight = new SamplingCapacity(8, 2, 1, 20, VOCAB);
    SamplingBatch penalised = new SamplingBatch();
    penalised.addRow(1f, 0, 1f, 0f, 1, 0, 1.2f, 0f, 0f, -1);
    for (int t = 0; t < 3; t++) {
      penalised.addSeenToken(t, 1);
    }
    assertThat(tight.hostFallbackReason(identity(1), penalised, VOCAB))
        .contains("3 seen-token entries");
    SamplingBatch biased = new SamplingBatch();
    biased.addRow(1f, 0, 1f, 0f, 1, 0, 1f, 0f, 0f, -1);
    biased.addBias(1, 2f);
    biased.addBias(2, 2f);
    assertThat(tight.hostFallbackReason(identity(1), biased, VOCAB))
        .contains("2 logit bias entries");
  }

  @Test
  void capacitiesAreChecked() {
    assertThat(SERVING.maskStrideWords()).isEqualTo(4040);
    assertThat(new SamplingCapacity(1, 0, 0, 0, 0).maskStrideWords()).isZero();
    assertThatThrownBy(() -> new SamplingCapacity(0, 0, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxRows >= 1");
    assertThatThrownBy(() -> new SamplingCapacity(4, 0, 0, 0, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mask vocabulary -1");
  }
}
