package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.nccl.Nccl;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.CollectiveStats;
import java.util.Objects;

/**
 * A {@link DeviceCommunicator} over one NCCL communicator, with the peer-memory kernels of {@link
 * CustomAllReduce} beside it where the GPUs allow them. AUTO picks per message size from a {@link
 * DeviceAllReduceTable}.
 */
public final class NcclCommunicator implements DeviceCommunicator {
  private final Nccl nccl = Nccl.get();
  private final long comm;
  private final int rank;
  private final int worldSize;
  private final AllReduceAlgorithm algorithm;
  private final CustomAllReduce.Rank custom; // null: NCCL only
  private final CollectiveStats stats = new CollectiveStats();
  private volatile DeviceAllReduceTable table;
  private AllReduceKernels normKernels; // for the unfused add + RMSNorm, loaded on first use
  private final boolean pdl;
  private DeviceBuffer barrierScratch;
  private CudaStream barrierStream;
  private boolean closed;

  /**
   * Wraps {@code comm} (rank {@code rank} of {@code worldSize}); {@code custom} may be null; {@code
   * pdl}: this communicator's own kernels launch as programmatic dependent launches. Call on the
   * rank's GPU thread.
   */
  public NcclCommunicator(
      long comm,
      int rank,
      int worldSize,
      AllReduceAlgorithm algorithm,
      CustomAllReduce.Rank custom,
      DeviceAllReduceTable table,
      boolean pdl) {
    this.pdl = pdl;
    this.comm = comm;
    this.rank = rank;
    this.worldSize = worldSize;
    this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
    this.custom = custom;
    this.table = Objects.requireNonNull(table, "table");
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

  /** The raw {@code ncclComm_t}. */
  public long handle() {
    return comm;
  }

  /** Whether peer-memory kernels are available to this rank. */
  public boolean hasCustom() {
    return custom != null;
  }

  /** The table AUTO uses. */
  public DeviceAllReduceTable table() {
    return table;
  }

  /** Replaces the table AUTO uses (after measuring). */
  public void setTable(DeviceAllReduceTable table) {
    this.table = Objects.requireNonNull(table, "table");
  }

  /** Throws if NCCL recorded an asynchronous error on this communicator. */
  public void checkHealth() {
    nccl.checkAsyncError(comm);
  }

  @Override
  public AllReduceAlgorithm resolve(long bytes, AllReduceAlgorithm requested) {
    AllReduceAlgorithm a = requested == AllReduceAlgorithm.AUTO ? table.select(bytes) : requested;
    return switch (a) {
      case ONESHOT, TWOSHOT, FUSED ->
          worldSize > 1 && custom != null && custom.fits(bytes) ? a : AllReduceAlgorithm.NCCL;
      default -> AllReduceAlgorithm.NCCL; // RING, RECURSIVE_DOUBLING: NCCL picks ring or tree
    };
  }

  @Override
  public void allReduce(long buf, long count, AllReduceAlgorithm requested, CudaStream stream) {
    long bytes = 4 * count;
    AllReduceAlgorithm a = resolve(bytes, requested);
    stats.record(CollectiveOp.ALL_REDUCE, a, bytes);
    if (count == 0) {
      return;
    }
    if (a == AllReduceAlgorithm.NCCL) {
      nccl.allReduce(buf, buf, count, comm, stream.handle());
    } else {
      custom.allReduce(buf, count, a, stream);
    }
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
    long count = (long) rows * hidden;
    AllReduceAlgorithm a = resolve(4 * count, requested);
    if (a == AllReduceAlgorithm.ONESHOT || a == AllReduceAlgorithm.FUSED) {
      stats.record(CollectiveOp.ALL_REDUCE, AllReduceAlgorithm.FUSED, 4 * count);
      custom.allReduceAddRmsNorm(x, residual, out, weight, rows, hidden, eps, stream);
      return;
    }
    allReduce(x, count, a, stream);
    addRmsNorm(out, residual, x, weight, rows, hidden, eps, stream);
  }

  /**
   * The unfused tail: {@code residual += x; out = weight * rmsnorm(residual)} on this rank alone
   * (no communication), for {@code x} already reduced.
   */
  public void addRmsNorm(
      long out,
      long residual,
      long x,
      long weight,
      int rows,
      int hidden,
      float eps,
      CudaStream stream) {
    if (normKernels == null) {
      normKernels = new AllReduceKernels(1, pdl);
    }
    normKernels.addRmsNorm(out, residual, x, weight, rows, hidden, eps, stream);
  }

  @Override
  public void allGather(long send, long recv, long countPerRank, CudaStream stream) {
    stats.record(CollectiveOp.ALL_GATHER, null, 4 * countPerRank * worldSize);
    if (countPerRank > 0) {
      nccl.allGather(send, recv, countPerRank, comm, stream.handle());
    }
  }

  @Override
  public void reduceScatter(long send, long recv, long recvCount, CudaStream stream) {
    stats.record(CollectiveOp.REDUCE_SCATTER, null, 4 * recvCount * worldSize);
    if (recvCount > 0) {
      nccl.reduceScatter(send, recv, recvCount, comm, stream.handle());
    }
  }

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
    // Pairs of send/recv in one group: NCCL schedules them together, so no ordering deadlock.
    nccl.groupStart();
    try {
      long so = 0;
      long ro = 0;
      for (int p = 0; p < worldSize; p++) {
        if (sendCounts[p] > 0) {
          nccl.send(send + 4 * so, sendCounts[p], p, comm, stream.handle());
        }
        if (recvCounts[p] > 0) {
          nccl.recv(recv + 4 * ro, recvCounts[p], p, comm, stream.handle());
        }
        so += sendCounts[p];
        ro += recvCounts[p];
      }
    } finally {
      nccl.groupEnd();
    }
  }

  @Override
  public void broadcast(long buf, long count, int root, CudaStream stream) {
    stats.record(CollectiveOp.BROADCAST, null, 4 * count);
    if (count > 0) {
      nccl.broadcast(buf, buf, count, root, comm, stream.handle());
    }
  }

  /** A one-float NCCL allreduce on a private stream, waited for: every rank has arrived. */
  @Override
  public void barrier() {
    stats.record(CollectiveOp.BARRIER, null, 0);
    if (barrierStream == null) {
      barrierStream = CudaStream.create();
      barrierScratch = DeviceBuffer.allocate(4);
    }
    nccl.allReduce(barrierScratch.ptr(), barrierScratch.ptr(), 1, comm, barrierStream.handle());
    barrierStream.synchronize();
  }

  /** Destroys the NCCL communicator and frees this rank's peer buffers (GPU thread). */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (barrierStream != null) {
      barrierStream.close();
      barrierScratch.close();
    }
    if (normKernels != null) {
      normKernels.close();
    }
    nccl.commDestroy(comm);
    if (custom != null) {
      custom.close();
    }
  }
}
