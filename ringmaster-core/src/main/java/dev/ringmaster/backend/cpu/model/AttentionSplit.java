package dev.ringmaster.backend.cpu.model;

/**
 * How the jobs of one attention call, numbered {@code token * groups + group} (a group is a block
 * of heads of one token that share each pass over the cache), are grouped into parallel tasks: one
 * job per task when there are few tokens (decode, or the verify pass of one sequence: even one
 * token's head groups spread over the cores, and a few tokens' groups balance over them), whole
 * tokens when there are many (prefill: fewer, larger tasks; the pool hands them out as threads free
 * up, which balances causal rows of different lengths). Every job is computed alone, so the
 * grouping does not change any result.
 *
 * @param perTask jobs per task: 1 or {@code groups}
 * @param jobs all jobs of the call
 */
record AttentionSplit(int perTask, int jobs) {
  /** Tokens per thread from which whole tokens are tasks. */
  private static final int TOKENS_PER_THREAD_FOR_TOKEN_TASKS = 8;

  /** The split of {@code tokens} tokens of {@code groups} head groups over {@code threads}. */
  static AttentionSplit of(int tokens, int groups, int threads) {
    boolean byToken = tokens >= TOKENS_PER_THREAD_FOR_TOKEN_TASKS * threads;
    return new AttentionSplit(byToken ? groups : 1, tokens * groups);
  }

  /** Number of tasks. */
  int tasks() {
    return jobs / perTask;
  }

  /** The first job of {@code task}. */
  int firstJob(int task) {
    return task * perTask;
  }

  /** One past the last job of {@code task}. */
  int endJob(int task) {
    return (task + 1) * perTask;
  }
}
