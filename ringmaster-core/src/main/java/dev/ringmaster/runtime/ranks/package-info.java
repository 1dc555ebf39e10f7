/**
 * The rank-group executor: one place that runs a step on every rank of a model at once, whether the
 * ranks are CPU threads of this JVM, GPUs each driven by its own thread, or other nodes. A {@link
 * dev.ringmaster.runtime.ranks.RankGroup} owns (or borrows) one {@link
 * dev.ringmaster.runtime.ranks.RankWorker} per rank, submits each step to all of them, joins,
 * returns rank 0's result, and on the first failure wakes the other ranks and reports through its
 * {@link dev.ringmaster.runtime.ranks.FailurePolicy}. It also gives ranks that shard every
 * sequence's cache their shards ({@link dev.ringmaster.runtime.ranks.RankGroup#stepOnShards}).
 */
package dev.ringmaster.runtime.ranks;
