package dev.ringmaster.cuda.kernels;

import dev.ringmaster.runtime.sampling.SamplingBatch;

/**
 * What {@link SamplingBuffers} hold, and so which steps {@link DeviceSampler} can sample: rows,
 * seen-token entries (penalties) and logit-bias entries over all rows, top-logprob alternatives per
 * row, and the largest vocabulary whose allowed-token masks fit a mask slot ({@code 0}: masked rows
 * go to the host).
 *
 * @param maxRows rows per step
 * @param maxSeen seen-token entries over the step's rows
 * @param maxBias logit-bias entries over the step's rows
 * @param topStride top-logprob alternatives per row
 * @param maskVocab vocabulary the mask slots cover (0 = no masks)
 */
public record SamplingCapacity(
    int maxRows, int maxSeen, int maxBias, int topStride, int maskVocab) {
  /** Checks the capacities. */
  public SamplingCapacity {
    if (maxRows < 1 || maxSeen < 0 || maxBias < 0 || topStride < 0 || maskVocab < 0) {
      throw new IllegalArgumentException(
          "sampling buffers need maxRows >= 1 and non-negative capacities, got rows "
              + maxRows
              + ", seen "
              + maxSeen
              + ", bias "
              + maxBias
              + ", top logprobs "
              + topStride
              + ", mask vocabulary "
              + maskVocab);
    }
  }

  /** 32-bit words per mask slot. */
  public int maskStrideWords() {
    return AllowedTokenMasks.strideWords(maskVocab);
  }

  /**
   * Why the step whose logits rows are {@code logitRows} (row {@code i} of the batch samples logits
   * row {@code logitRows[i]}) cannot be sampled on the device over a vocabulary of {@code vocab},
   * or null when it can: what goes to the host sampler instead.
   */
  public String hostFallbackReason(int[] logitRows, SamplingBatch batch, int vocab) {
    int n = batch.rows();
    if (logitRows.length != n) {
      return "the batch has " + n + " rows for " + logitRows.length + " logits rows";
    }
    for (int i = 0; i < n; i++) {
      if (logitRows[i] != i) {
        return "batch row " + i + " samples logits row " + logitRows[i];
      }
    }
    if (vocab < 1 || vocab > DeviceSampler.MAX_VOCAB) {
      return "a vocabulary of "
          + vocab
          + " exceeds the device sampler's "
          + DeviceSampler.MAX_VOCAB;
    }
    if (n > maxRows) {
      return n + " rows exceed the sampling buffers' " + maxRows;
    }
    if (batch.seenTokenEntries() > maxSeen) {
      return batch.seenTokenEntries() + " seen-token entries exceed " + maxSeen;
    }
    if (batch.biasEntries() > maxBias) {
      return batch.biasEntries() + " logit bias entries exceed " + maxBias;
    }
    if (batch.maxTopLogprobs() > topStride) {
      return batch.maxTopLogprobs() + " top logprobs exceed " + topStride;
    }
    if (batch.hasAllowedTokenMasks() && vocab > maskVocab) {
      return maskVocab == 0
          ? "the sampling buffers hold no allowed-token masks"
          : "masks over " + vocab + " tokens exceed the mask slots' " + maskVocab;
    }
    return null;
  }
}
