package dev.ringmaster.runtime.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.junit.jupiter.api.Test;

class SamplingBatchSubsetTest {
  @Test
  void rowsCopiedIntoAnotherBatchSampleAsInTheirOwn() {
    int vocab = 300;
    Random rnd = new Random(3);
    float[] logits = new float[4 * vocab];
    for (int i = 0; i < logits.length; i++) {
      logits[i] = (float) rnd.nextGaussian() * 3;
    }
    SamplingBatch all = new SamplingBatch();
    all.addRow(0f, 0, 1f, 0f, 0, 0, 1f, 0f, 0f, -1);
    all.addRow(0.8f, 0, 0.95f, 0f, 11, 4, 1.2f, 0.3f, 0.2f, 2);
    all.addSeenToken(7, 2);
    all.addSeenToken(9, 0);
    all.addRow(1f, 20, 1f, 0.05f, 12, 1, 1f, 0f, 0f, 0);
    all.addBias(5, -100f);
    all.addBias(6, 3f);
    all.addRow(0.6f, 0, 1f, 0f, 13, 9, 1f, 0f, 0f, -1);
    SampledTokens whole = all.sampleOnCpu(logits, vocab);
    for (int r = 0; r < 4; r++) {
      SamplingBatch one = new SamplingBatch();
      one.addRowOf(all, r);
      assertThat(one.seenTokenEntries()).isEqualTo(r == 1 ? 2 : 0);
      assertThat(one.biasEntries()).isEqualTo(r == 2 ? 2 : 0);
      SampledTokens part = one.sampleOnCpu(logits, r * vocab, vocab);
      assertThat(part.tokens()[0]).as("row " + r).isEqualTo(whole.tokens()[r]);
      assertThat(Float.floatToIntBits(part.logprobs()[0]))
          .as("row " + r + " logprob (NaN where none was asked)")
          .isEqualTo(Float.floatToIntBits(whole.logprobs()[r]));
    }
  }
}
