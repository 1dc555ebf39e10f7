package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.DeviceSampler;
import dev.ringmaster.cuda.kernels.SamplingBuffers;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What a step hands back to the host: the argmax ids of greedy steps, logits rows when they are
 * asked for, or tokens sampled on the device ({@link DeviceSampler}: bias, penalties, temperature,
 * top-k / top-p / min-p, seeded draws and logprobs), so that only token ids and the logprobs asked
 * for cross to the host. GPU thread only.
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
    this.buffers = new SamplingBuffers(act.logitRows, MAX_SEEN, MAX_BIAS, TOP_LOGPROBS);
  }

  /** Bytes of device memory held. */
  long bytes() {
    return 0; // the sampling buffers' few MB are counted with the activations' slack
  }

  /**
   * Whether the decode step of {@code n} rows, whose logits rows are {@code rows}, can be sampled
   * on the device: the logits of row i are the step's row i, and the batch fits the buffers.
   */
  boolean samplesOnDevice(int n, int[] rows, SamplingBatch b) {
    if (b.rows() != n
        || n > buffers.maxRows()
        || vocab > DeviceSampler.MAX_VOCAB
        || b.hasAllowedTokenMasks()) {
      return false;
    }
    for (int i = 0; i < rows.length; i++) {
      if (rows[i] != i) {
        return false;
      }
    }
    return b.seenTokenEntries() <= MAX_SEEN
        && b.biasEntries() <= MAX_BIAS
        && b.maxTopLogprobs() <= TOP_LOGPROBS;
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
