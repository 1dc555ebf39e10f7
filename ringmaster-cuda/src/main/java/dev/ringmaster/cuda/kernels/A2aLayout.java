package dev.ringmaster.cuda.kernels;

/**
 * The shape of one MoE layer's all-to-all expert dispatch for a step of {@code tokens} tokens on
 * rank {@code rank} of {@code ranks} ({@code moe_dispatch.cu}). Rank r routes the slice {@code
 * [first(), first() + mine())} of the tokens, {@code perRank()} = ceil(tokens / ranks) per rank as
 * the CPU's {@code MoeMlp} splits them (the last ranks may get fewer, or none). Every rank sends
 * every peer one fixed block of {@code perRank()} rows, one per slice token, so the message sizes
 * depend on the token count alone (a decode graph captures them) and what each row carries is in
 * the row: {@code [hidden | topK expert ids | topK weights]}, ids -1 where another rank owns the
 * expert. The owners send back one output row per (row, slot) pair.
 *
 * @param ranks ranks of the expert-parallel group
 * @param rank this rank
 * @param tokens tokens of the step (the same on every rank)
 * @param hidden hidden size
 * @param topK routed experts per token
 */
public record A2aLayout(int ranks, int rank, int tokens, int hidden, int topK) {

  /** Checks the arguments. */
  public A2aLayout {
    if (ranks < 1 || rank < 0 || rank >= ranks) {
      throw new IllegalArgumentException("rank " + rank + " of " + ranks);
    }
    if (tokens < 0 || hidden < 1 || topK < 1) {
      throw new IllegalArgumentException(
          "tokens " + tokens + ", hidden " + hidden + ", topK " + topK);
    }
  }

  /** Tokens each rank routes (ceil(tokens / ranks)); the capacity of every block. */
  public int perRank() {
    return (tokens + ranks - 1) / ranks;
  }

  /** This rank's first token. */
  public int first() {
    return Math.min(tokens, rank * perRank());
  }

  /** Tokens this rank routes (0 when the step has fewer tokens than the ranks before it took). */
  public int mine() {
    return Math.min(tokens, first() + perRank()) - first();
  }

  /** Floats of one dispatch row: the hidden state, then topK ids (i32 bits) and topK weights. */
  public int rowFloats() {
    return rowFloats(hidden, topK);
  }

  /** Floats of one dispatch row of a layer of this shape. */
  public static int rowFloats(int hidden, int topK) {
    return hidden + 2 * topK;
  }

  /** Floats sent to (and received from) each peer by the dispatch. */
  public long dispatchFloatsPerPeer() {
    return (long) perRank() * rowFloats();
  }

  /** Floats sent to (and received from) each peer by the combine: one row per (row, slot). */
  public long combineFloatsPerPeer() {
    return (long) perRank() * topK * hidden;
  }

  /** Rows an owner receives: one block of {@link #perRank()} from every rank, in rank order. */
  public int receivedRows() {
    return ranks * perRank();
  }

  /** The dispatch's per-peer counts (floats), for {@code DeviceCommunicator.allToAll}. */
  public long[] dispatchCounts() {
    return filled(dispatchFloatsPerPeer());
  }

  /** The combine's per-peer counts (floats). */
  public long[] combineCounts() {
    return filled(combineFloatsPerPeer());
  }

  /** The largest {@link #receivedRows()} of any step of up to {@code maxTokens} tokens. */
  public static int maxReceivedRows(int maxTokens, int ranks) {
    return ranks * ((maxTokens + ranks - 1) / ranks);
  }

  private long[] filled(long count) {
    long[] c = new long[ranks];
    java.util.Arrays.fill(c, count);
    return c;
  }
}
