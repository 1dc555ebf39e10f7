package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.DeviceSampler;
import dev.ringmaster.cuda.kernels.SamplingBuffers;
import dev.ringmaster.cuda.kernels.SamplingCapacity;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What a step hands back to the host: the argmax ids of greedy steps, logits rows when they are
 * asked for, or tokens sampled on the device ({@link DeviceSampler}: bias, penalties, temperature,
 * allowed-token masks, top-k / top-p / min-p, seeded draws and logprobs), so that only token ids
 * and the logprobs asked for cross to the host (and, for constrained rows, their masks to the
 * device). GPU thread only.
 */
final class StepReadback implements AutoCloseable {
  /** Distinct seen tokens (prompt and output) over a step's rows the penalty tables hold. */
  static final int MAX_SEEN = 1 << 20;

  /** {@code logit_bias} entries over a step's rows. */
  static final int MAX_BIAS = 1 << 14;

  /** Top logprob alternatives per row (OpenAI's limit). */
  static final int TOP_LOGPROBS = 20;

  private final int vocab;
  private final Activations act;
  private final CudaStream stream;
  private final HostBuffer hostOut;
  private final DeviceSampler sampler;
  private final SamplingBuffers buffers;

  StepReadback(int vocab, Activations act, CudaStream stream, DeviceSampler sampler) {
    this.vocab = vocab;
    this.act = act;
    this.stream = stream;
    this.sampler = sampler;
    this.hostOut = HostBuffer.allocate(4L * act.logitRows * vocab);
    int maskVocab = vocab <= DeviceSampler.MAX_VOCAB ? vocab : 0;
    this.buffers =
        new SamplingBuffers(
            new SamplingCapacity(act.logitRows, MAX_SEEN, MAX_BIAS, TOP_LOGPROBS, maskVocab));
  }

  /** Bytes of device memory held. */
  long bytes() {
    // The sampling buffers' few MB (masks: 16 KB a row at a vocabulary of 129,280) are counted
    // with the activations' slack.
    return 0;
  }

  /**
   * Whether the step whose logits rows are {@code rows} can be sampled on the device: the logits of
   * row i are the step's row i, and the batch (masks included) fits the buffers.
   */
  boolean samplesOnDevice(int[] rows, SamplingBatch b) {
    return buffers.capacity().hostFallbackReason(rows, b, vocab) == null;
  }

  /** Samples the first {@code b.rows()} rows of the step's logits on the device and waits. */
  SampledTokens sample(SamplingBatch b) {
    return sampler.sample(stream, act.logits.ptr(), vocab, b, buffers);
  }

  /** Copies the chosen rows of the logits (or argmax) buffer, rows 0.. of it holding tokens. */
  Object collect(int[] rows, int rowBase, boolean greedy, int count) {
    int maxRow = 0;
    for (int i = 0; i < count; i++) {
      maxRow = Math.max(maxRow, rows[i] - rowBase);
    }
    MemorySegment host = hostOut.segment();
    if (greedy) {
      CudaDriverAccess.copyToHost(host, act.argmax.ptr(), 4L * (maxRow + 1), stream);
      stream.synchronize();
      int[] out = new int[count];
      for (int i = 0; i < count; i++) {
        out[i] = host.getAtIndex(ValueLayout.JAVA_INT, rows[i] - rowBase);
      }
      return out;
    }
    CudaDriverAccess.copyToHost(host, act.logits.ptr(), 4L * (maxRow + 1) * vocab, stream);
    stream.synchronize();
    float[] out = new float[count * vocab];
    for (int i = 0; i < count; i++) {
      MemorySegment.copy(
          host, ValueLayout.JAVA_FLOAT, 4L * (rows[i] - rowBase) * vocab, out, i * vocab, vocab);
    }
    return out;
  }

  @Override
  public void close() {
    buffers.close();
    hostOut.close();
  }
}
