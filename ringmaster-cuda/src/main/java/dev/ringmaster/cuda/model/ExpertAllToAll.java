package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.A2aLayout;
import dev.ringmaster.cuda.kernels.ParallelKernels;
import dev.ringmaster.model.config.ModelConfig;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One rank's MoE layer with all-to-all expert dispatch, as the CPU's {@code MoeMlp} does it: the
 * rank takes its slice of the step's tokens ({@link A2aLayout}), sends each token with its routed
 * experts to the ranks owning them, runs its own experts on what it receives, sends the pair
 * outputs back, adds them up in slot order onto the (replicated) shared experts' output of its
 * tokens, and all ranks allgather the slices. Fixed-size blocks per peer, packed and unpacked on
 * the GPU, all on the compute stream: a decode step with its two all-to-alls and the allgather is
 * captured into the rank's CUDA graphs. GPU thread only.
 */
final class ExpertAllToAll implements AutoCloseable {
  private final DeviceCommunicator comm;
  private final CudaStream stream;
  private final ParallelKernels kernels;
  private final int numExperts;
  private final int hidden;
  private final int topK;
  private final DeviceBuffer owner;
  private final DeviceBuffer localOf;
  private final DeviceBuffer send;
  private final DeviceBuffer recv;
  private final DeviceBuffer x;
  private final DeviceBuffer ids;
  private final DeviceBuffer weights;
  private final DeviceBuffer back;
  private final DeviceBuffer slice;
  private final DeviceBuffer gathered;
  private final List<DeviceBuffer> all = new ArrayList<>();

  /**
   * Buffers for steps of up to {@code maxTokens} tokens of {@code cfg}'s MoE layers; {@code
   * kernels} stay the caller's.
   */
  ExpertAllToAll(
      ModelConfig cfg, RankShard shard, CudaStream stream, ParallelKernels kernels, int maxTokens) {
    this.comm = shard.comm();
    this.stream = stream;
    this.kernels = kernels;
    this.numExperts = cfg.moe().numExperts();
    this.hidden = cfg.hiddenSize();
    this.topK = cfg.moe().topK();
    int ranks = shard.size();
    long rows = A2aLayout.maxReceivedRows(maxTokens, ranks);
    long per = rows / ranks;
    owner = table(shard.expertOwners(numExperts));
    localOf = table(shard.localIndexOf(numExperts));
    send = f32(rows * A2aLayout.rowFloats(hidden, topK));
    recv = f32(rows * A2aLayout.rowFloats(hidden, topK));
    x = f32(rows * hidden);
    ids = f32(rows * topK);
    weights = f32(rows * topK);
    back = f32(rows * topK * hidden);
    slice = f32(per * hidden);
    gathered = f32(rows * hidden);
  }

  private DeviceBuffer f32(long n) {
    DeviceBuffer b = DeviceBuffer.allocate(4 * Math.max(n, 1));
    all.add(b);
    return b;
  }

  private DeviceBuffer table(int[] values) {
    DeviceBuffer b = f32(values.length);
    try (HostBuffer h = HostBuffer.allocate(4L * values.length)) {
      for (int i = 0; i < values.length; i++) {
        h.segment().setAtIndex(ValueLayout.JAVA_INT, i, values[i]);
      }
      CudaDriverAccess.copyToDevice(b.ptr(), h.segment(), 4L * values.length, stream);
      stream.synchronize();
    }
    return b;
  }

  /** Bytes of device memory held. */
  long bytes() {
    return all.stream().mapToLong(DeviceBuffer::bytes).sum();
  }

  /**
   * The MoE output of {@code n} tokens whose normed inputs are {@code act.normed} and whose routing
   * (all {@code n} tokens, global expert ids) is in {@code act.expertIds} / {@code
   * act.expertWeights}; returns the device pointer of the output rows {@code [n, hidden]}, the same
   * on every rank (no allreduce follows). {@code tensorCores}: the expert kernels to use, chosen
   * for the step's {@code n} tokens as on one GPU, so a pair's output does not depend on the ranks.
   */
  long forward(
      GpuOps ops,
      Activations act,
      KernelWeights.MoeWeights m,
      int n,
      int inter,
      boolean tensorCores,
      Consumer<String> mark) {
    A2aLayout l = new A2aLayout(comm.worldSize(), comm.rank(), n, hidden, topK);
    long normed = act.normed.ptr();
    boolean shared = m.shared() != null;
    if (shared && l.mine() > 0) {
      ops.swiglu(
          slice.ptr(),
          act.normed.ptr(4L * l.first() * hidden),
          m.shared(),
          act.gateUp.ptr(),
          act.act.ptr(),
          l.mine());
      mark.accept("moe.shared_experts");
    }
    kernels.a2aPack(
        stream, l, send.ptr(), normed, act.expertIds.ptr(), act.expertWeights.ptr(), owner.ptr());
    long[] dispatch = l.dispatchCounts();
    comm.allToAll(send.ptr(), dispatch, recv.ptr(), dispatch, stream);
    kernels.a2aUnpack(
        stream, l, x.ptr(), ids.ptr(), weights.ptr(), recv.ptr(), localOf.ptr(), numExperts);
    mark.accept("moe.a2a.dispatch");
    ops.kernels
        .moe()
        .moeExpertPairs(
            stream,
            act.moe,
            x.ptr(),
            m.w13(),
            m.w2(),
            ids.ptr(),
            weights.ptr(),
            l.receivedRows(),
            hidden,
            inter,
            tensorCores);
    mark.accept("moe.routed_experts");
    long[] combine = l.combineCounts();
    comm.allToAll(act.moe.pairRowsPtr(), combine, back.ptr(), combine, stream);
    kernels.a2aCombine(
        stream,
        l,
        slice.ptr(),
        shared ? slice.ptr() : 0,
        back.ptr(),
        act.expertIds.ptr(),
        owner.ptr());
    comm.allGather(slice.ptr(), gathered.ptr(), (long) l.perRank() * hidden, stream);
    mark.accept("moe.a2a.combine_gather");
    return gathered.ptr();
  }

  /**
   * Runs the step's collectives once at their largest size ({@code maxTokens}; {@code pairRows}:
   * the expert pair outputs the combine sends, as in {@link #forward}), with whatever the buffers
   * hold, and waits. NCCL connects to its peers on first use and allocates its channel buffers
   * then: doing it here, before the KV cache is sized from the free memory, keeps those allocations
   * out of the cache's share (the GLM-5 shape at EP 4 ran out of memory inside NCCL when the first
   * all-to-all came during graph capture, after the cache had taken the rest).
   */
  void connect(int maxTokens, long pairRows) {
    A2aLayout l = new A2aLayout(comm.worldSize(), comm.rank(), maxTokens, hidden, topK);
    long[] dispatch = l.dispatchCounts();
    comm.allToAll(send.ptr(), dispatch, recv.ptr(), dispatch, stream);
    long[] combine = l.combineCounts();
    comm.allToAll(pairRows, combine, back.ptr(), combine, stream);
    comm.allGather(slice.ptr(), gathered.ptr(), (long) l.perRank() * hidden, stream);
    stream.synchronize();
  }

  @Override
  public void close() {
    all.forEach(DeviceBuffer::close);
  }
}
