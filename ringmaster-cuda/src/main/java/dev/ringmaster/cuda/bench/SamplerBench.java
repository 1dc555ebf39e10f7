package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DeviceSampler;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import dev.ringmaster.cuda.kernels.SamplingBuffers;
import dev.ringmaster.cuda.kernels.SamplingCapacity;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * KernelBench rows for the device sampler ({@link DeviceSampler}) at a DeepSeek-V3 vocabulary of
 * 129,280 and 1, 16, 64 and 128 rows: greedy, temperature 0.8 with top-p 0.95 (the serving
 * benchmark's setting), top-k 50, top-p with logprobs of 5 alternatives, and greedy and top-p with
 * every row constrained by its own allowed-token mask (1% of the vocabulary, as a JSON string's
 * characters allow; the mask copy is part of the upload, not of the timed launch). Logits are
 * uniform in [-1, 1) (a random model's nearly flat rows: the top-p set is most of the vocabulary).
 * GB/s counts one read of the logits.
 */
final class SamplerBench {
  private static final int VOCAB = 129_280;

  private SamplerBench() {}

  /** Adds the sampler rows to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    DeviceSampler sampler = k.deviceSampler();
    for (int rows : new int[] {1, 16, 64, 128}) {
      try (DeviceBuffer logits = b.randomF32(rows * VOCAB);
          SamplingBuffers buf = new SamplingBuffers(new SamplingCapacity(rows, 0, 0, 8, VOCAB))) {
        row(b, s, sampler, logits, buf, rows, "greedy", 0f, 0, 1f, -1, false);
        row(b, s, sampler, logits, buf, rows, "T 0.8 top-p 0.95", 0.8f, 0, 0.95f, -1, false);
        row(b, s, sampler, logits, buf, rows, "T 1 top-k 50", 1f, 50, 1f, -1, false);
        row(
            b,
            s,
            sampler,
            logits,
            buf,
            rows,
            "T 0.8 top-p 0.95, 5 logprobs",
            0.8f,
            0,
            0.95f,
            5,
            false);
        row(b, s, sampler, logits, buf, rows, "greedy, masked", 0f, 0, 1f, -1, true);
        row(b, s, sampler, logits, buf, rows, "T 0.8 top-p 0.95, masked", 0.8f, 0, 0.95f, -1, true);
      }
    }
  }

  private static void row(
      KernelBench b,
      CudaStream s,
      DeviceSampler sampler,
      DeviceBuffer logits,
      SamplingBuffers buf,
      int rows,
      String what,
      float t,
      int topK,
      float topP,
      int logprobs,
      boolean masked) {
    SamplingBatch batch = new SamplingBatch();
    SplittableRandom random = new SplittableRandom(rows);
    for (int r = 0; r < rows; r++) {
      batch.addRow(t, topK, topP, 0, 1000 + r, 17, 1, 0, 0, logprobs);
      if (masked) {
        long[] mask = new long[(VOCAB + 63) / 64];
        for (int i = 0; i < VOCAB / 100; i++) {
          int token = random.nextInt(VOCAB);
          mask[token >>> 6] |= 1L << token;
        }
        batch.setAllowedTokens(mask);
      }
    }
    buf.upload(batch, rows, s);
    double ms = b.time(i -> sampler.launch(s, logits.ptr(), rows, VOCAB, buf));
    b.row(
        String.format(Locale.ROOT, "sample %s, vocab %d, %d rows", what, VOCAB, rows),
        ms,
        4.0 * rows * VOCAB / (ms * 1e6));
  }
}
