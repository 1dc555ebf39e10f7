package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.topology.PeerAccess;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.List;

/**
 * The peer-memory allreduce of the GPUs of one process: each rank owns a staging buffer and a
 * signal block, every rank has peer access to every other, and the kernels read the peers' staging
 * buffers directly (one-shot, two-shot, and one-shot fused with residual add + RMSNorm). Inputs are
 * copied into the rank's own staging buffer first (a device copy on the same stream), so the whole
 * operation is capturable into a CUDA graph with fixed addresses.
 *
 * <p>Only where {@code cuDeviceCanAccessPeer} allows every pair; messages above {@link #maxBytes()}
 * go to NCCL.
 */
public final class CustomAllReduce {
  private final long maxBytes;
  private final Rank[] ranks;

  private CustomAllReduce(long maxBytes, Rank[] ranks) {
    this.maxBytes = maxBytes;
    this.ranks = ranks;
  }

  /**
   * Sets up the ranks of {@code gpus} (rank i on {@code gpus.get(i)}): allocates staging buffers of
   * {@code maxBytes} and zeroed signal blocks, and enables peer access both ways between every
   * pair. Throws {@link IllegalStateException} if some pair has no peer access. The kernels launch
   * as programmatic dependent launches.
   */
  public static CustomAllReduce create(List<GpuThread> gpus, long maxBytes) {
    return create(gpus, maxBytes, true);
  }

  /** As {@link #create(List, long)}; {@code pdl}: programmatic dependent launches or plain ones. */
  public static CustomAllReduce create(List<GpuThread> gpus, long maxBytes, boolean pdl) {
    int n = gpus.size();
    if (n > AllReduceKernels.MAX_RANKS) {
      throw new IllegalStateException(
          "custom allreduce supports up to " + AllReduceKernels.MAX_RANKS + " GPUs, not " + n);
    }
    long[] staging = new long[n];
    long[] signals = new long[n];
    Rank[] ranks = new Rank[n];
    for (int r = 0; r < n; r++) {
      int rank = r;
      GpuThread g = gpus.get(r);
      ranks[r] =
          g.call(
              () -> {
                CudaDriver d = CudaDriver.get();
                PeerAccess pa = PeerAccess.get();
                int self = d.device(g.device().ordinal());
                for (GpuThread other : gpus) {
                  int peer = d.device(other.device().ordinal());
                  if (peer == self) {
                    continue;
                  }
                  if (!pa.canAccessPeer(self, peer)) {
                    throw new IllegalStateException(
                        "GPU "
                            + g.device().ordinal()
                            + " cannot access GPU "
                            + other.device().ordinal()
                            + "'s memory (no peer access)");
                  }
                  long ctx = d.primaryContextRetain(peer);
                  try {
                    pa.enable(ctx);
                  } finally {
                    d.primaryContextRelease(peer);
                  }
                }
                DeviceBuffer buf = DeviceBuffer.allocate(maxBytes + 16);
                DeviceBuffer sig = DeviceBuffer.allocate(AllReduceKernels.SIGNAL_BYTES);
                try (CudaStream s = CudaStream.create()) {
                  sig.zero(s);
                  s.synchronize();
                }
                // Every block of every rank must be resident at once (a spinning block holds its
                // SM), so ranks that share a GPU split its multiprocessors between them.
                int sms = g.device().multiprocessors() / ranksOn(gpus, g.device().ordinal());
                return new Rank(
                    rank, staging, signals, buf, sig, new AllReduceKernels(sms, pdl), maxBytes);
              });
      staging[r] = ranks[r].staging.ptr();
      signals[r] = ranks[r].signal.ptr();
    }
    return new CustomAllReduce(maxBytes, ranks);
  }

  private static int ranksOn(List<GpuThread> gpus, int ordinal) {
    return (int) gpus.stream().filter(t -> t.device().ordinal() == ordinal).count();
  }

  /** Largest message the staging buffers hold. */
  public long maxBytes() {
    return maxBytes;
  }

  /** Rank {@code r}'s handle (use from its GPU's thread). */
  public Rank rank(int r) {
    return ranks[r];
  }

  /** One rank's buffers and kernels. */
  public static final class Rank implements AutoCloseable {
    private final int rank;
    private final long[] stagingPtrs; // every rank's, filled in as ranks are created
    private final long[] signalPtrs;
    private final DeviceBuffer staging;
    private final DeviceBuffer signal;
    private final AllReduceKernels kernels;
    private final long maxBytes;
    private final CudaDriver driver = CudaDriver.get();

    private Rank(
        int rank,
        long[] stagingPtrs,
        long[] signalPtrs,
        DeviceBuffer staging,
        DeviceBuffer signal,
        AllReduceKernels kernels,
        long maxBytes) {
      this.rank = rank;
      this.stagingPtrs = stagingPtrs;
      this.signalPtrs = signalPtrs;
      this.staging = staging;
      this.signal = signal;
      this.kernels = kernels;
      this.maxBytes = maxBytes;
    }

    /** Whether a message of {@code bytes} fits the staging buffers. */
    public boolean fits(long bytes) {
      return bytes <= maxBytes;
    }

    private void stage(long src, long bytes, CudaStream stream) {
      if (!fits(bytes)) {
        throw new IllegalArgumentException(
            bytes + " B exceed the custom allreduce's " + maxBytes + " B staging buffer");
      }
      driver.memcpyDtoDAsync(staging.ptr(), src, bytes, stream.handle());
    }

    /** Sums {@code count} floats at {@code buf} over ranks, in place, one-shot or two-shot. */
    public void allReduce(long buf, long count, AllReduceAlgorithm algorithm, CudaStream stream) {
      if (count == 0) {
        return;
      }
      stage(buf, 4 * count, stream);
      switch (algorithm) {
        case ONESHOT, FUSED -> kernels.oneShot(stagingPtrs, signalPtrs, rank, buf, count, stream);
        case TWOSHOT -> kernels.twoShot(stagingPtrs, signalPtrs, rank, buf, count, stream);
        default -> throw new IllegalArgumentException("not a peer-memory algorithm: " + algorithm);
      }
    }

    /**
     * One kernel: {@code residual += sum over ranks of x; out = weight * rmsnorm(residual)}, for
     * {@code rows} rows of {@code hidden} floats ({@code x} is left as it was).
     */
    public void allReduceAddRmsNorm(
        long x,
        long residual,
        long out,
        long weight,
        int rows,
        int hidden,
        float eps,
        CudaStream stream) {
      if (rows == 0) {
        return;
      }
      stage(x, 4L * rows * hidden, stream);
      kernels.fused(
          stagingPtrs, signalPtrs, rank, out, residual, weight, rows, hidden, eps, stream);
    }

    /** Frees the buffers (every rank's kernels must have finished). */
    @Override
    public void close() {
      kernels.close();
      staging.close();
      signal.close();
    }
  }
}
