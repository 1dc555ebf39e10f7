package dev.ringmaster.parallel;

import java.util.List;

/**
 * The ranks of a group that this JVM drives, each on its own platform thread: all ranks of a {@link
 * LocalWorld}, or this node's share of a world that spans processes (for example {@code
 * dev.ringmaster.parallel.tcp.TcpWorld}). A model spread over ranks runs its steps on threads of
 * its own ({@code dev.ringmaster.runtime.ranks.RankGroup}) over {@link #groups()}, and {@link
 * #abort}s the world when a rank fails, so it does not care where the other ranks live; {@link
 * #call} runs one-off work (collective tests and benchmarks) on fresh threads.
 */
public interface LocalRanks {
  /** This JVM's ranks' groups, in ascending global rank (consecutive ranks). */
  List<ProcessGroup> groups();

  /**
   * Runs {@code fn} on every local rank, each on its own platform thread, and returns the results
   * in the order of {@link #groups()}. If any rank fails, the world is aborted (so peers waiting in
   * a collective wake) and a {@link CollectiveException} naming the first failure is thrown.
   */
  <T> List<T> call(LocalWorld.RankFunction<T> fn);

  /**
   * Aborts the world: waiting collectives throw and so does every later one.
   *
   * @param rank the rank that failed, or -1 for an outside cause
   */
  void abort(int rank, Throwable cause);
}
