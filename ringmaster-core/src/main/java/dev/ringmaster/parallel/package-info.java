/**
 * Process groups and collectives for tensor and expert parallelism.
 *
 * <p>{@link dev.ringmaster.parallel.ProcessGroup} is one rank's view of a group of ranks with the
 * collectives tensor parallelism needs (allreduce, allgather, reduce-scatter, broadcast) and the
 * uneven all-to-all that expert parallelism uses for MoE dispatch and combine. {@link
 * dev.ringmaster.parallel.LocalWorld} runs a group inside one JVM: every rank is a thread, and the
 * ranks exchange data only through per-rank staging buffers and progress flags, so the allreduce
 * algorithms ({@link dev.ringmaster.parallel.AllReduceAlgorithm}) execute step by step the way they
 * do between GPUs. Every reduction is deterministic: all ranks end with bit-identical results, so
 * tensor-parallel ranks never drift apart. {@link dev.ringmaster.parallel.LocalRanks} is what a
 * model spread over ranks needs from either kind of world: this JVM's ranks and a way to abort them
 * (a model runs its steps on them through {@code dev.ringmaster.runtime.ranks.RankGroup}); {@code
 * dev.ringmaster.parallel.tcp} holds worlds whose ranks live in several JVMs. Both kinds of process
 * group extend {@link dev.ringmaster.parallel.CheckedProcessGroup} (argument checks, statistics,
 * the trivial cases) and move only the data themselves; both worlds turn their ranks' outcomes into
 * results or one exception with {@link dev.ringmaster.parallel.WorldFailure}.
 */
package dev.ringmaster.parallel;
