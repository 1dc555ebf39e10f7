package dev.ringmaster.backend.cpu.model;

/**
 * How the (token, head) pairs of one attention call, numbered {@code token * heads + head}, are
 * grouped into parallel tasks: by heads when there are few tokens (decode: one pair per task, so
 * even one sequence's heads spread over the cores), by whole tokens when there are many (prefill:
 * fewer, larger tasks; the pool hands them out as threads free up, which balances causal rows of
 * different lengths). Every pair is computed alone, so the grouping does not change any result.
 *
 * @param perTask pairs per task: 1 or {@code heads}
 * @param pairs all pairs of the call
 */
record AttentionSplit(int perTask, int pairs) {
  /** Tokens per thread from which whole tokens are tasks. */
  private static final int TOKENS_PER_THREAD_FOR_TOKEN_TASKS = 2;

  /** The split of {@code tokens} tokens of {@code heads} heads over {@code threads} threads. */
  static AttentionSplit of(int tokens, int heads, int threads) {
    boolean byToken = tokens >= TOKENS_PER_THREAD_FOR_TOKEN_TASKS * threads;
    return new AttentionSplit(byToken ? heads : 1, tokens * heads);
  }

  /** Number of tasks. */
  int tasks() {
    return pairs / perTask;
  }

  /** The first pair of {@code task}. */
  int firstJob(int task) {
    return task * perTask;
  }

  /** One past the last pair of {@code task}. */
  int endJob(int task) {
    return (task + 1) * perTask;
  }
}
