package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.Kernel;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.function.BiFunction;

/**
 * Next-token sampling on the device ({@code rm_sample_rows} in {@code sampling.cu}): for {@code
 * rows} rows of f32 logits it applies logit bias and penalties (in place), then each masked row's
 * allowed-token bitmask (the other tokens become {@code -inf}, in place), then temperature, top-k,
 * top-p and min-p, draws with Philox per (seed, step), and writes token ids and the requested
 * logprobs into {@link SamplingBuffers}. The same rules, order and tie-breaking as the CPU
 * reference {@link dev.ringmaster.runtime.sampling.RowSampler}: the same distribution per row and,
 * up to float rounding at the edges of the cumulative sums, the same tokens.
 *
 * <p>One launch, no allocation and no host synchronisation, so it can be captured in a decode graph
 * after the logits: capture {@link #launch} with fixed {@code logits} and {@code buffers}, then per
 * replay {@link SamplingBuffers#upload} the step's batch before launching the graph and {@link
 * SamplingBuffers#download} after it.
 */
public final class DeviceSampler {
  /** Threads per block (one block per row). */
  public static final int THREADS = 1024;

  /** Largest vocabulary (the kernel keeps a weight sum per 128 logits in shared memory). */
  public static final int MAX_VOCAB = 2048 * 128;

  private final Kernel kernel;

  DeviceSampler(BiFunction<String, Integer, Kernel> kernel) {
    this.kernel = kernel.apply("rm_sample_rows", 24);
  }

  /**
   * Queues the sampling of {@code rows} rows of {@code logits [rows, vocab]} (device f32, modified:
   * bias, penalties and masks are applied in place) with the parameters and masks in {@code b},
   * into {@code b}'s outputs.
   */
  public void launch(CudaStream s, long logits, int rows, int vocab, SamplingBuffers b) {
    if (vocab < 1 || vocab > MAX_VOCAB) {
      throw new IllegalArgumentException(
          "the device sampler takes vocabularies of 1.." + MAX_VOCAB + " tokens, got " + vocab);
    }
    if (rows > b.maxRows()) {
      throw new IllegalArgumentException(
          rows + " rows exceed the sampling buffers' " + b.maxRows());
    }
    if (b.uploadedMaskSlots() > 0 && vocab > b.capacity().maskVocab()) {
      throw new IllegalArgumentException(
          "masks over a vocabulary of "
              + vocab
              + " exceed the sampling buffers' mask slots of "
              + b.capacity().maskVocab()
              + " tokens");
    }
    kernel.arg(0, b.outTokens()).arg(1, b.outLogprobs()).arg(2, b.outTopIds());
    kernel.arg(3, b.outTopLogprobs()).arg(4, b.topStride()).arg(5, logits).arg(6, vocab);
    kernel.arg(7, b.rowArray(0)).arg(8, b.rowArray(1)).arg(9, b.rowArray(2));
    kernel.arg(10, b.rowArray(3)).arg(11, b.seeds()).arg(12, b.steps());
    kernel.arg(13, b.rowArray(4)).arg(14, b.rowArray(5)).arg(15, b.rowArray(6));
    kernel.arg(16, b.rowArray(7)).arg(17, b.rowArray(8)).arg(18, b.seen());
    kernel.arg(19, b.biasStart()).arg(20, b.bias());
    kernel.arg(21, b.maskSlots()).arg(22, b.masks()).arg(23, b.maskStride());
    kernel.launch(s, rows, 1, 1, THREADS, 0);
  }

  /**
   * Uploads {@code batch}, samples its rows of {@code logits} and waits for the tokens: the eager
   * path, outside a graph.
   */
  public SampledTokens sample(
      CudaStream s, long logits, int vocab, SamplingBatch batch, SamplingBuffers b) {
    b.upload(batch, batch.rows(), s);
    launch(s, logits, batch.rows(), vocab, b);
    return b.download(s, batch.rows());
  }
}
