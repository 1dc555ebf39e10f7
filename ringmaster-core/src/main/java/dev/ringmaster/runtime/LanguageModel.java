package dev.ringmaster.runtime;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.sampling.SampledTokens;
import dev.ringmaster.runtime.sampling.SamplingBatch;

/**
 * A loaded language model that runs batched forward steps over sequences' caches, whatever its
 * backend (CPU or CUDA) and rank layout (one rank, tensor/expert-parallel ranks, several nodes).
 */
public interface LanguageModel extends AutoCloseable {
  /** The model's configuration. */
  ModelConfig config();

  /**
   * A new, empty cache for one sequence on the model's own blocks, for use without a scheduler
   * (generate, benchmarks, tests): a backend with fixed KV storage (the GPU) takes them from a
   * private {@link KvBlockAllocator} over all of it; heap caches take no block ids.
   */
  KvCache newCache();

  /**
   * A new, empty cache for one sequence whose block ids come from {@code blocks}, the scheduler's
   * allocator: its blocks, the prefix cache's references on them and the backend's storage are then
   * one count. The allocator must fit the model's storage ({@link #kvCapacityTokens}); a backend
   * with fixed storage serves one allocator's caches at a time.
   *
   * @throws IllegalArgumentException when {@code blocks} has more blocks than the storage, or
   *     blocks of another size than {@link #kvPageSize}
   * @throws IllegalStateException when caches of another allocator still hold blocks of the storage
   */
  default KvCache newCache(KvBlockAllocator blocks) {
    throw new UnsupportedOperationException(
        getClass().getSimpleName() + " cannot make caches on a scheduler's KV block allocator");
  }

  /** Bytes of weights read from the checkpoint (all ranks together). */
  long weightBytes();

  /**
   * Tokens the model's fixed KV storage holds (the GPU's paged cache, its padding block excluded),
   * from which the scheduler sizes its {@link KvBlockAllocator}; empty when caches grow on demand
   * (the CPU), so the caller sizes its budget itself.
   */
  default java.util.OptionalLong kvCapacityTokens() {
    return java.util.OptionalLong.empty();
  }

  /**
   * Token positions per block of the model's own paged KV cache (the GPU's), which the scheduler's
   * pages must equal so one shared page is one block; empty when caches are heap arrays (the CPU).
   */
  default java.util.OptionalInt kvPageSize() {
    return java.util.OptionalInt.empty();
  }

  /**
   * Whether this model's caches can share whole pages ({@link KvCache#retainPage}, {@link
   * KvCache#attachPages}), which the prefix cache needs.
   */
  default boolean sharesKvPages() {
    return true;
  }

  /**
   * The decode batch sizes this model replays as captured graphs, ascending; empty when it has none
   * (the CPU, or graphs disabled). A decode step of {@code n} sequences runs as the smallest of
   * them that is at least {@code n}, padded; a larger one runs without a graph. The server caps its
   * running requests at the largest.
   */
  default java.util.List<Integer> decodeGraphBatchSizes() {
    return java.util.List.of();
  }

  /**
   * Bytes one token's keys and values take in this model's caches, all layers (and every rank that
   * stores them) together: what a KV pool of N tokens costs. The CPU caches hold f32.
   */
  default long kvBytesPerToken() {
    return KvCache.bytesPerToken(config());
  }

  /**
   * Runs the new tokens of a batch of sequences, appending them to the caches, and returns logits
   * {@code [logitRows.length, vocab]}.
   */
  float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows);

  /**
   * Like {@link #forward} but returns the greedy token (argmax, lowest id on ties) of each
   * requested row instead of its logits; a backend may compute it where the logits live and skip
   * copying them.
   */
  default int[] forwardGreedy(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    float[] logits = forward(tokens, layout, caches, logitRows);
    int vocab = config().vocabSize();
    int[] out = new int[logitRows.length];
    for (int r = 0; r < out.length; r++) {
      out[r] = dev.ringmaster.backend.cpu.CpuOps.argmax(logits, r * vocab, vocab);
    }
    return out;
  }

  /**
   * Like {@link #forward} but chooses one token per requested row with {@code sampling}'s row of
   * the same index ({@code sampling.rows() == logitRows.length}), returning the tokens and the
   * logprobs the rows asked for. This default computes the logits with {@link #forward} and samples
   * them on the CPU ({@link dev.ringmaster.runtime.sampling.RowSampler}); a device backend samples
   * where the logits live and copies back only tokens and logprobs, with the same distribution per
   * row.
   */
  default SampledTokens forwardSample(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, SamplingBatch sampling) {
    sampling.checkRows(logitRows.length);
    float[] logits = forward(tokens, layout, caches, logitRows);
    return sampling.sampleOnCpu(logits, config().vocabSize());
  }

  /**
   * Like {@link #forward}, and also returns the final hidden state (after the final norm) of every
   * token of the step, which a NEXTN drafter is fed. Only backends that expose it implement this.
   *
   * @throws UnsupportedOperationException on a backend that does not expose hidden states
   */
  default HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    throw new UnsupportedOperationException(
        getClass().getSimpleName()
            + " does not expose its hidden states; NEXTN speculation runs on a single-rank model"
            + " (the CPU or one GPU)");
  }

  /**
   * Like {@link #forward}, and also returns the hidden states {@code capture} names for every token
   * of the step ({@code capture.width(hidden_size)} values per token), which an EAGLE-3 head is
   * fed. {@link HiddenCapture#FINAL} is {@link #forwardHidden(int[], BatchLayout, KvCache[],
   * int[])}.
   *
   * @throws UnsupportedOperationException on a backend that does not expose these hidden states
   */
  default HiddenLogits forwardHidden(
      int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows, HiddenCapture capture) {
    if (capture.isFinal()) {
      return forwardHidden(tokens, layout, caches, logitRows);
    }
    throw new UnsupportedOperationException(
        getClass().getSimpleName()
            + " does not expose the hidden states of its layers; EAGLE3 speculation runs on a"
            + " single-rank model (the CPU or one GPU)");
  }

  /**
   * Loads an EAGLE-3 draft head ({@code LlamaForCausalLMEagle3} checkpoint layout) from {@code dir}
   * over this model: the head shares this model's embedding and reads its layers' hidden states.
   * The caller closes the head before the model.
   *
   * @throws UnsupportedOperationException on a backend or rank layout that does not run heads
   * @throws IllegalArgumentException when the head does not fit this model
   */
  default DraftHead loadEagle3Head(java.nio.file.Path dir) {
    throw new UnsupportedOperationException(
        getClass().getSimpleName()
            + " does not run EAGLE-3 heads; EAGLE3 speculation runs on a single-rank model (the"
            + " CPU or one GPU: --tp-size 1 --ep-size 1)");
  }

  /**
   * The checkpoint's first multi-token-prediction layer, loaded beside the model, or empty when the
   * config has none ({@code num_nextn_predict_layers} 0), the checkpoint does not hold it, or this
   * backend does not run it.
   */
  default java.util.Optional<NextnLayer> nextnLayer() {
    return java.util.Optional.empty();
  }

  /** Prefill or extend one sequence and return the logits of every new token. */
  default float[] forwardAll(int[] tokens, KvCache cache) {
    BatchLayout layout = BatchLayout.single(tokens.length, cache.length());
    int[] rows = new int[tokens.length];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = i;
    }
    return forward(tokens, layout, new KvCache[] {cache}, rows);
  }

  @Override
  void close();
}
