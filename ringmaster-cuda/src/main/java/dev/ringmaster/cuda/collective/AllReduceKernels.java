package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.LaunchConfig;
import dev.ringmaster.cuda.kernels.KernelImage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Launches of the peer-memory allreduce kernels ({@code custom_allreduce.cu}) and of the
 * residual-add + RMSNorm kernel the unfused path uses. The first parameter of each allreduce kernel
 * is {@code RmArPeers}, a 128-byte struct of the eight ranks' staging and signal pointers passed by
 * value, so the argument block has a 128-byte first slot and 8-byte slots after it. Load once per
 * GPU context; use from that GPU's thread only.
 *
 * <p>With {@code pdl} (the run's {@code KernelTuning.pdl}) they launch as programmatic dependent
 * launches like the model's kernels (they wait for the previous kernel first, too). A dependent
 * launched early cannot take the slots of an allreduce block its peers wait for: it launches only
 * once every block of the allreduce is resident (see {@code rm_pdl_prologue}).
 */
final class AllReduceKernels implements AutoCloseable {
  /** {@code RM_AR_MAX_RANKS}. */
  static final int MAX_RANKS = 8;

  /** {@code RM_AR_MAX_BLOCKS}. */
  static final int MAX_BLOCKS = 128;

  /** Bytes of {@code RmArSignal}: three flag arrays and the epochs. */
  static final long SIGNAL_BYTES = 3L * MAX_BLOCKS * MAX_RANKS * 4 + 4L * MAX_BLOCKS;

  private static final int PEERS_BYTES = 16 * MAX_RANKS;
  private static final int THREADS = 512;

  private final CudaDriver driver = CudaDriver.get();
  private final long module;
  private final Launch oneShot;
  private final Launch twoShot;
  private final Launch fused;
  private final Launch rmsNorm;
  private final int maxBlocks;
  private final boolean pdlLaunches;

  /** Loads the kernels; {@code pdl}: launch them as programmatic dependent launches. */
  AllReduceKernels(int multiprocessors, boolean pdl) {
    pdlLaunches = pdl;
    module = KernelImage.loadModule(driver);
    oneShot = new Launch("rm_ar_oneshot", true, 5);
    twoShot = new Launch("rm_ar_twoshot", true, 5);
    fused = new Launch("rm_ar_fused_add_rmsnorm", true, 9);
    rmsNorm = new Launch("rm_rmsnorm", false, 9);
    maxBlocks = Math.max(1, Math.min(MAX_BLOCKS, multiprocessors));
  }

  /** Writes the peers struct: staging pointers then signal pointers, zero for unused ranks. */
  static void writePeers(MemorySegment slot, long[] staging, long[] signals) {
    slot.fill((byte) 0);
    for (int r = 0; r < staging.length; r++) {
      slot.setAtIndex(ValueLayout.JAVA_LONG, r, staging[r]);
      slot.setAtIndex(ValueLayout.JAVA_LONG, MAX_RANKS + r, signals[r]);
    }
  }

  private int blocksFor(long work) {
    return (int) Math.max(1, Math.min(maxBlocks, (work + THREADS - 1) / THREADS));
  }

  void oneShot(long[] staging, long[] signals, int rank, long out, long count, CudaStream s) {
    long groups = (count + 3) / 4;
    oneShot.peers(staging, signals).i(1, rank).i(2, staging.length).l(3, out).l(4, count);
    oneShot.go(blocksFor(groups), THREADS, s);
  }

  void twoShot(long[] staging, long[] signals, int rank, long out, long count, CudaStream s) {
    int n = staging.length;
    long per = ((count + 3) / 4 + n - 1) / n;
    twoShot.peers(staging, signals).i(1, rank).i(2, n).l(3, out).l(4, count);
    twoShot.go(blocksFor(per), THREADS, s);
  }

  @SuppressWarnings("checkstyle:ParameterNumber")
  void fused(
      long[] staging,
      long[] signals,
      int rank,
      long out,
      long residual,
      long weight,
      int rows,
      int hidden,
      float eps,
      CudaStream s) {
    fused.peers(staging, signals).i(1, rank).i(2, staging.length).l(3, out).l(4, residual);
    fused.l(5, weight).i(6, rows).i(7, hidden).f(8, eps);
    fused.go(Math.max(1, Math.min(maxBlocks, rows)), THREADS, s);
  }

  /** {@code residual += x; out = weight * rmsnorm(residual)} over contiguous rows. */
  void addRmsNorm(
      long out, long residual, long x, long weight, int rows, int hidden, float eps, CudaStream s) {
    rmsNorm.l(0, out).i(1, hidden).l(2, residual).i(3, hidden).l(4, x).i(5, hidden);
    rmsNorm.l(6, weight).i(7, hidden).f(8, eps);
    rmsNorm.go(rows, 256, s);
  }

  @Override
  public void close() {
    driver.moduleUnload(module);
  }

  /** One kernel's argument block; slot 0 is the peers struct when {@code peersFirst}. */
  private final class Launch {
    private final String name;
    private final long function;
    private final MemorySegment params;
    private final MemorySegment[] slots;
    private final LaunchConfig pdl = pdlLaunches ? new LaunchConfig() : null;

    Launch(String name, boolean peersFirst, int arity) {
      this.name = name;
      this.function = driver.moduleGetFunction(module, name);
      KernelSignature.check(function, name, arity, peersFirst ? PEERS_BYTES : 0);
      Arena arena = Arena.ofAuto();
      params = arena.allocate(ValueLayout.ADDRESS.byteSize() * arity, 8);
      slots = new MemorySegment[arity];
      for (int i = 0; i < arity; i++) {
        slots[i] = arena.allocate(i == 0 && peersFirst ? PEERS_BYTES : 8, 8);
        params.setAtIndex(ValueLayout.ADDRESS, i, slots[i]);
      }
    }

    Launch peers(long[] staging, long[] signals) {
      writePeers(slots[0], staging, signals);
      return this;
    }

    Launch i(int k, int v) {
      slots[k].set(ValueLayout.JAVA_INT, 0, v);
      return this;
    }

    Launch l(int k, long v) {
      slots[k].set(ValueLayout.JAVA_LONG, 0, v);
      return this;
    }

    Launch f(int k, float v) {
      slots[k].set(ValueLayout.JAVA_FLOAT, 0, v);
      return this;
    }

    void go(int grid, int block, CudaStream s) {
      if (pdl != null) {
        driver.launchKernelEx(
            pdl.set(grid, 1, 1, block, 1, 1, 0, s.handle()), function, params, name);
        return;
      }
      driver.launchKernel(function, grid, 1, 1, block, 1, 1, 0, s.handle(), params, name);
    }
  }
}
