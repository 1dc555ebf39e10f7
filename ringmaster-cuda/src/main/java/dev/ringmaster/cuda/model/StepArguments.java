package dev.ringmaster.cuda.model;

import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;

/**
 * One step's arguments, checked against the GPU model before any device work: what the step needs
 * to run.
 *
 * @param caches each sequence's paged cache on this model's block pool
 * @param decodeShaped whether every sequence brings 1 to {@link CudaCausalLm#FEW_TOKENS_PER_SEQ}
 *     tokens and all fit the logits buffer (then every token is one row of the decode kernels)
 * @param oneTokenEach whether no sequence brings more than one token
 * @param mostTokensPerSeq the most new tokens one sequence brings
 * @param consecutivePositions whether every sequence's new tokens sit at consecutive positions (a
 *     chain's verify pass; a tree's siblings share a position)
 */
record StepArguments(
    GpuKvCache[] caches,
    boolean decodeShaped,
    boolean oneTokenEach,
    int mostTokensPerSeq,
    boolean consecutivePositions) {

  /**
   * Checks a step's sizes, caches (from {@code pool}, each holding exactly the positions before its
   * new tokens, none growing past the block table's width), token ids and logit rows, and grows
   * each cache to hold its new tokens.
   *
   * @param logitRows rows of the logits buffer: a longer step runs as prefill chunks
   * @param sparseAttention whether the model uses sparse attention: a step of several tokens of one
   *     sequence then runs as a prefill chunk, whose indexer runs are planned per sequence
   * @throws IllegalArgumentException naming the first argument that does not fit
   */
  static StepArguments check(
      int[] tokens,
      BatchLayout layout,
      KvCache[] caches,
      int[] rows,
      int vocabSize,
      StepInputs inputs,
      BlockPool pool,
      int logitRows,
      boolean sparseAttention) {
    int n = tokens.length;
    int numSeqs = layout.numSeqs();
    if (layout.numTokens() != n || caches.length != numSeqs) {
      throw new IllegalArgumentException("tokens, layout and caches disagree in size");
    }
    if (numSeqs > inputs.tableRows) {
      throw new IllegalArgumentException(
          numSeqs + " sequences in one step exceed the GPU block table's " + inputs.tableRows);
    }
    GpuKvCache[] seqCaches = new GpuKvCache[numSeqs];
    boolean fewTokens = n <= logitRows;
    int mostPerSeq = 0;
    boolean consecutive = true;
    for (int s = 0; s < numSeqs; s++) {
      int start = layout.seqStart()[s];
      int end = layout.seqStart()[s + 1];
      fewTokens &= end > start && end - start <= CudaCausalLm.FEW_TOKENS_PER_SEQ;
      mostPerSeq = Math.max(mostPerSeq, end - start);
      // A sparse-attention step of several tokens of one sequence runs as a prefill chunk, whose
      // indexer runs are planned per sequence.
      fewTokens &= !sparseAttention || end - start == 1;
      if (!(caches[s].external() instanceof GpuKvCache g) || g.pool() != pool) {
        throw new IllegalArgumentException("sequence " + s + ": cache is not from this GPU model");
      }
      seqCaches[s] = g;
      if (end > start) {
        int first = layout.positions()[start];
        if (first != caches[s].length()) {
          throw new IllegalArgumentException(
              "sequence "
                  + s
                  + ": new tokens start at position "
                  + first
                  + " but its cache holds "
                  + caches[s].length());
        }
        for (int i = start; i < end; i++) {
          consecutive &= layout.positions()[i] == first + (i - start);
        }
        int last = layout.positions()[end - 1];
        if (last >= inputs.maxBlocksPerSeq * pool.blockSize()) {
          throw new IllegalArgumentException(
              "sequence " + s + " would reach " + (last + 1) + " tokens, past the GPU's limit");
        }
        caches[s].ensureCapacity(last + 1);
      }
    }
    for (int id : tokens) {
      if (id < 0 || id >= vocabSize) {
        throw new IllegalArgumentException(
            "token id " + id + " is outside the vocabulary (0.." + (vocabSize - 1) + ")");
      }
    }
    for (int r : rows) {
      if (r < 0 || r >= n) {
        throw new IllegalArgumentException("logit row " + r + " outside 0.." + (n - 1));
      }
    }
    return new StepArguments(seqCaches, fewTokens, mostPerSeq == 1, mostPerSeq, consecutive);
  }
}
