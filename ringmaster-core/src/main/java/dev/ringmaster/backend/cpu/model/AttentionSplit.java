package dev.ringmaster.backend.cpu.model;

/**
 * How the (token, head) pairs of one attention call, numbered {@code token * heads + head}, are
 * grouped into parallel tasks: by heads when there are few tokens per thread (decode, and the few
 * tokens of a speculative verify pass: one pair per task, so the pairs spread evenly over the
 * cores), by whole tokens when there are many (prefill: fewer, larger tasks; the pool hands them
 * out as threads free up, which balances causal rows of different lengths). Whole-token tasks need
 * many tokens per thread to balance: a 5-token verify pass as 5 tasks on 2 threads keeps one thread
 * busy for 3 tokens while the other idles after 2, and the loop's cost model then counts the idle
 * time as region overhead and keeps later calls serial. Every pair is computed alone, so the
 * grouping does not change any result.
 *
 * @param perTask pairs per task: 1 or {@code heads}
 * @param pairs all pairs of the call
 */
record AttentionSplit(int perTask, int pairs) {
  /**
   * Tokens per thread from which whole tokens are tasks: then the last, partly filled round of
   * tasks leaves a thread idle for at most an eighth of the call.
   */
  static final int TOKENS_PER_THREAD_FOR_TOKEN_TASKS = 8;

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
