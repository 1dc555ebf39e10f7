package dev.ringmaster.parallel.bench;

import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.ProcessGroup;
import java.util.Arrays;

/**
 * One rank's buffers for one benchmarked operation and size. Inputs are small integers, so every
 * sum is exact in float and results can be checked for equality whatever the summation order.
 */
final class Workload {
  private final ProcessGroup group;
  private final CollectiveOp op;
  private final AllReduceAlgorithm algorithm;
  private final int n;
  private final int rank;
  private final int count; // allreduce/broadcast: buffer length; others: elements per rank pair
  private final float[] input;
  private final float[] buf;
  private final int[] counts;

  Workload(ProcessGroup group, CollectiveOp op, AllReduceAlgorithm algorithm, int count) {
    this.group = group;
    this.op = op;
    this.algorithm = algorithm;
    this.n = group.worldSize();
    this.rank = group.rank();
    this.count = count;
    int inputLength =
        switch (op) {
          case ALL_REDUCE, BROADCAST, ALL_GATHER -> count;
          default -> count * n;
        };
    this.input = new float[inputLength];
    for (int i = 0; i < inputLength; i++) {
      input[i] = value(rank, i);
    }
    int outputLength =
        switch (op) {
          case ALL_GATHER, ALL_TO_ALL -> count * n;
          default -> count;
        };
    this.buf = new float[outputLength];
    this.counts = new int[n];
    Arrays.fill(counts, count);
  }

  /** Message size in nccl-tests terms for {@code count} elements per buffer or per rank. */
  static long bytes(CollectiveOp op, int worldSize, int count) {
    return switch (op) {
      case ALL_REDUCE, BROADCAST -> 4L * count;
      default -> 4L * count * worldSize;
    };
  }

  /** Elements per buffer (allreduce, broadcast) or per rank (the others) for a size in bytes. */
  static int count(CollectiveOp op, int worldSize, long bytes) {
    long perRank =
        op == CollectiveOp.ALL_REDUCE || op == CollectiveOp.BROADCAST
            ? bytes / 4
            : bytes / 4 / worldSize;
    return (int) Math.max(1, perRank);
  }

  private static float value(int rank, int i) {
    return (i * 7 + rank * 3) % 17 - 8;
  }

  /** Restores inputs an earlier iteration overwrote (untimed). */
  void prepare() {
    switch (op) {
      case ALL_REDUCE -> System.arraycopy(input, 0, buf, 0, count);
      case BROADCAST -> {
        if (rank == 0) {
          System.arraycopy(input, 0, buf, 0, count);
        } else {
          Arrays.fill(buf, 0f);
        }
      }
      default -> {}
    }
  }

  /** The timed operation. */
  void execute() {
    switch (op) {
      case ALL_REDUCE -> group.allReduce(buf, 0, count, algorithm);
      case ALL_GATHER -> group.allGather(input, 0, count, buf);
      case REDUCE_SCATTER -> group.reduceScatter(input, buf, counts);
      case ALL_TO_ALL -> group.allToAll(input, counts, buf, counts);
      case BROADCAST -> group.broadcast(buf, 0, count, 0);
      case BARRIER -> throw new IllegalArgumentException("barrier is not benchmarked");
    }
  }

  /** Whether the last execution produced exactly the expected values. */
  boolean check() {
    for (int i = 0; i < buf.length; i++) {
      if (buf[i] != expected(i)) {
        return false;
      }
    }
    return true;
  }

  private float expected(int i) {
    return switch (op) {
      case ALL_REDUCE -> sumOverRanks(i);
      case REDUCE_SCATTER -> sumOverRanks(rank * count + i);
      case ALL_GATHER -> value(i / count, i % count);
      case ALL_TO_ALL -> value(i / count, rank * count + i % count);
      case BROADCAST -> value(0, i);
      case BARRIER -> 0;
    };
  }

  private float sumOverRanks(int i) {
    float sum = 0;
    for (int r = 0; r < n; r++) {
      sum += value(r, i);
    }
    return sum;
  }
}
