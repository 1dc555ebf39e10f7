package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.collective.CustomAllReduce;
import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.CollectiveStats;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Test double: a rank of several that share one GPU (NCCL refuses two ranks on one device), so that
 * the tensor-parallel model can be checked on a machine with one GPU. Allreduces run the peer-
 * memory kernels of {@link CustomAllReduce} over buffers of the same context (one-shot, two-shot,
 * or one-shot fused with add + RMSNorm), which needs the ranks' kernels to run concurrently on the
 * GPU; a rank left waiting traps after 30 s rather than hanging. The allgather is an allreduce of a
 * zeroed buffer holding this rank's block (exact: the other ranks add zeros). The all-to-all copies
 * each block straight into the receiving rank's buffer (the ranks share one context, so a peer's
 * pointer is an ordinary device pointer), between two one-float peer-kernel allreduces that serve
 * as device barriers, so it captures into graphs like the rest. Only the operations the model
 * issues are provided.
 */
final class SameDeviceCommunicator implements DeviceCommunicator {
  private final int rank;
  private final int worldSize;
  private final CustomAllReduce.Rank custom;
  private final AllReduceAlgorithm algorithm;
  private final CollectiveStats stats = new CollectiveStats();
  private final Group group;
  private DeviceBuffer barrierScratch; // the device barrier's one float ({@link #allocateBarrier})

  /**
   * What the ranks of one GPU share: a host barrier and the receive addresses each rank publishes
   * for the all-to-all in progress.
   */
  static final class Group {
    private final CyclicBarrier barrier;
    private final long[] recv;
    private final long[][] recvCounts;

    /** For {@code ranks} ranks. */
    Group(int ranks) {
      this.barrier = new CyclicBarrier(ranks);
      this.recv = new long[ranks];
      this.recvCounts = new long[ranks][];
    }
  }

  /**
   * Rank {@code rank} of {@code worldSize}; {@code algorithm} is ONESHOT, TWOSHOT or FUSED; {@code
   * group} is shared by the ranks' communicators.
   */
  SameDeviceCommunicator(
      int rank,
      int worldSize,
      CustomAllReduce.Rank custom,
      AllReduceAlgorithm algorithm,
      Group group) {
    if (algorithm != AllReduceAlgorithm.ONESHOT
        && algorithm != AllReduceAlgorithm.TWOSHOT
        && algorithm != AllReduceAlgorithm.FUSED) {
      throw new IllegalArgumentException(
          "ranks on one GPU reduce by peer kernels, not " + algorithm);
    }
    this.rank = rank;
    this.worldSize = worldSize;
    this.custom = custom;
    this.algorithm = algorithm;
    this.group = group;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int worldSize() {
    return worldSize;
  }

  @Override
  public AllReduceAlgorithm allReduceAlgorithm() {
    return algorithm;
  }

  @Override
  public CollectiveStats stats() {
    return stats;
  }

  @Override
  public AllReduceAlgorithm resolve(long bytes, AllReduceAlgorithm requested) {
    AllReduceAlgorithm a = requested == AllReduceAlgorithm.AUTO ? algorithm : requested;
    if (!custom.fits(bytes)) {
      throw new IllegalArgumentException(bytes + " B exceed the test's staging buffers");
    }
    return a;
  }

  @Override
  public void allReduce(long buf, long count, AllReduceAlgorithm requested, CudaStream stream) {
    AllReduceAlgorithm a = resolve(4 * count, requested);
    stats.record(CollectiveOp.ALL_REDUCE, a, 4 * count);
    custom.allReduce(
        buf, count, a == AllReduceAlgorithm.FUSED ? AllReduceAlgorithm.ONESHOT : a, stream);
  }

  @Override
  public void allReduceAddRmsNorm(
      long x,
      long residual,
      long out,
      long weight,
      int rows,
      int hidden,
      float eps,
      AllReduceAlgorithm requested,
      CudaStream stream) {
    AllReduceAlgorithm a = resolve(4L * rows * hidden, requested);
    if (a == AllReduceAlgorithm.TWOSHOT) {
      throw new UnsupportedOperationException("the model fuses only one-shot allreduces");
    }
    stats.record(CollectiveOp.ALL_REDUCE, AllReduceAlgorithm.FUSED, 4L * rows * hidden);
    custom.allReduceAddRmsNorm(x, residual, out, weight, rows, hidden, eps, stream);
  }

  @Override
  public void allGather(long send, long recv, long countPerRank, CudaStream stream) {
    long total = countPerRank * worldSize;
    resolve(4 * total, AllReduceAlgorithm.ONESHOT);
    stats.record(CollectiveOp.ALL_GATHER, null, 4 * total);
    CudaDriverAccess.memsetZero(recv, 4 * total, stream);
    CudaDriverAccess.copyOnDevice(recv + 4 * rank * countPerRank, send, 4 * countPerRank, stream);
    custom.allReduce(recv, total, AllReduceAlgorithm.ONESHOT, stream);
  }

  @Override
  public void reduceScatter(long send, long recv, long recvCount, CudaStream stream) {
    throw new UnsupportedOperationException("not used by the model");
  }

  /**
   * Publishes where this rank receives, waits for every rank's addresses, and copies each block
   * into its receiver's buffer between two device barriers: the first keeps a block from landing
   * before the receiver's earlier work on that buffer is done, the second keeps the receiver from
   * reading before every block has landed.
   */
  @Override
  public void allToAll(
      long send, long[] sendCounts, long recv, long[] recvCounts, CudaStream stream) {
    if (sendCounts.length != worldSize || recvCounts.length != worldSize) {
      throw new IllegalArgumentException("all-to-all needs one count per rank (" + worldSize + ")");
    }
    long total = 0;
    for (long c : sendCounts) {
      total += c;
    }
    stats.record(CollectiveOp.ALL_TO_ALL, null, 4 * total);
    group.recv[rank] = recv;
    group.recvCounts[rank] = recvCounts.clone();
    hostBarrier();
    long[] dst = new long[worldSize];
    for (int p = 0; p < worldSize; p++) {
      long[] theirs = group.recvCounts[p];
      if (theirs[rank] != sendCounts[p]) {
        throw new IllegalStateException(
            "rank "
                + rank
                + " sends "
                + sendCounts[p]
                + " floats to rank "
                + p
                + ", which expects "
                + theirs[rank]);
      }
      long offset = 0;
      for (int s = 0; s < rank; s++) {
        offset += theirs[s];
      }
      dst[p] = group.recv[p] + 4 * offset;
    }
    hostBarrier(); // every rank has read the addresses before any publishes its next ones
    deviceBarrier(stream);
    long from = send;
    for (int p = 0; p < worldSize; p++) {
      if (sendCounts[p] > 0) {
        CudaDriverAccess.copyOnDevice(dst[p], from, 4 * sendCounts[p], stream);
      }
      from += 4 * sendCounts[p];
    }
    deviceBarrier(stream);
  }

  /**
   * Allocates the device barrier's float, on this rank's GPU thread before any step runs. Not on
   * first use: the ranks share one device, and an allocation in the middle of a step may wait for
   * the device, where the other rank's peer kernel spins until this rank's arrives (it traps after
   * 30 s, failing the step with CUDA_ERROR_LAUNCH_FAILED).
   */
  void allocateBarrier() {
    barrierScratch = DeviceBuffer.allocate(16);
    CudaStream s = CudaStream.create();
    try {
      barrierScratch.zero(s);
      s.synchronize();
    } finally {
      s.close();
    }
  }

  /**
   * A one-float one-shot allreduce: its kernel finishes on no rank before every rank's stream has
   * reached it.
   */
  private void deviceBarrier(CudaStream stream) {
    if (barrierScratch == null) {
      throw new IllegalStateException("allocateBarrier was not called on rank " + rank);
    }
    custom.allReduce(barrierScratch.ptr(), 1, AllReduceAlgorithm.ONESHOT, stream);
  }

  private void hostBarrier() {
    try {
      group.barrier.await(5, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted at the barrier", e);
    } catch (BrokenBarrierException | TimeoutException e) {
      throw new IllegalStateException("a rank did not reach the barrier", e);
    }
  }

  @Override
  public void broadcast(long buf, long count, int root, CudaStream stream) {
    throw new UnsupportedOperationException("not used by the model");
  }

  /** Waits on the host until every rank has arrived (the ranks are threads of this JVM). */
  @Override
  public void barrier() {
    stats.record(CollectiveOp.BARRIER, null, 0);
    hostBarrier();
  }

  /**
   * Frees this rank's barrier float (GPU thread); the peer buffers are closed by their owner
   * ({@link CustomAllReduce.Rank#close}).
   */
  @Override
  public void close() {
    if (barrierScratch != null) {
      barrierScratch.close();
      barrierScratch = null;
    }
  }
}
