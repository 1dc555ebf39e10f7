package dev.ringmaster.runtime.ranks;

/**
 * One rank's part of a step (or of loading), run on that rank's {@link RankWorker}.
 *
 * @param <T> what the rank returns
 */
@FunctionalInterface
public interface RankWork<T> {
  /**
   * Runs rank {@code rank}'s part.
   *
   * @param rank the rank's index in its {@link RankGroup} (0 is the rank whose result a step
   *     returns)
   */
  T run(int rank) throws Exception;
}
