package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.driver.HostBuffer;
import dev.ringmaster.cuda.kernels.ParallelKernels;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.lang.foreign.ValueLayout;
import java.util.function.Consumer;

/**
 * The steps a tensor-parallel rank adds to the model, all queued on the rank's compute stream so a
 * decode step (collectives included) is captured into the rank's CUDA graph: vocab-parallel
 * embedding plus allreduce, the allreduce after each row-parallel block fused with the residual add
 * and the next RMSNorm, the LM head's vocabulary slices allgathered into full logits, and (expert
 * parallelism) dropping the routed pairs other ranks compute. Every rank issues the same
 * collectives in the same order. GPU thread only.
 */
final class TensorParallelOps implements AutoCloseable {
  private final RankShard shard;
  private final DeviceCommunicator comm;
  private final CudaStream stream;
  private final ParallelKernels kernels;
  private final int vocabFirst;
  private final int vocabShare;
  private final DeviceBuffer localLogits;
  private final DeviceBuffer gathered;
  private final DeviceBuffer localOf; // null unless expert-parallel

  /** Buffers for LM heads of up to {@code logitRows} rows. */
  TensorParallelOps(ModelConfig cfg, RankShard shard, CudaStream stream, int logitRows) {
    this.shard = shard;
    this.comm = shard.comm();
    this.stream = stream;
    this.kernels = new ParallelKernels();
    this.vocabFirst = shard.start(cfg.vocabSize());
    this.vocabShare = shard.share(cfg.vocabSize());
    this.localLogits = DeviceBuffer.allocate(4L * logitRows * vocabShare);
    this.gathered = DeviceBuffer.allocate(4L * logitRows * vocabShare * shard.size());
    if (cfg.moe() != null && shard.expertParallel() && !shard.allToAll()) {
      int[] table = shard.localIndexOf(cfg.moe().numExperts());
      localOf = DeviceBuffer.allocate(4L * table.length);
      try (HostBuffer h = HostBuffer.allocate(4L * table.length)) {
        for (int e = 0; e < table.length; e++) {
          h.segment().setAtIndex(ValueLayout.JAVA_INT, e, table[e]);
        }
        CudaDriverAccess.copyToDevice(localOf.ptr(), h.segment(), 4L * table.length, stream);
        stream.synchronize();
      }
    } else {
      localOf = null;
    }
  }

  /** This rank's parallel kernels (the module stays loaded until {@link #close}). */
  ParallelKernels kernels() {
    return kernels;
  }

  /** Bytes of device memory held. */
  long bytes() {
    return localLogits.bytes() + gathered.bytes() + (localOf == null ? 0 : localOf.bytes());
  }

  /**
   * Embedding rows of {@code n} token ids: this rank's vocabulary rows (zeros for the others),
   * summed over ranks so every rank holds every row.
   */
  void embedding(long out, DeviceMatrix table, long ids, int n) {
    kernels.embeddingShard(stream, out, table.ptr(), ids, n, table.cols(), vocabFirst, vocabShare);
    comm.allReduce(out, (long) n * table.cols(), stream);
  }

  /**
   * {@code residual += sum over ranks of x; out = weight * rmsnorm(residual)} for {@code rows} rows
   * of {@code hidden}: one fused kernel where the allreduce resolves to a peer-memory kernel that
   * can fuse, else the allreduce (in place on {@code x}) and the model's own add + RMSNorm kernel,
   * so that one rank through this path computes exactly what the single-GPU model does.
   */
  void reduceAddRmsNorm(
      GpuOps ops,
      long out,
      long residual,
      long x,
      long weight,
      int rows,
      int hidden,
      float eps,
      Consumer<String> mark) {
    long count = (long) rows * hidden;
    AllReduceAlgorithm a = comm.resolve(4 * count, comm.allReduceAlgorithm());
    if (a == AllReduceAlgorithm.ONESHOT || a == AllReduceAlgorithm.FUSED) {
      comm.allReduceAddRmsNorm(x, residual, out, weight, rows, hidden, eps, a, stream);
      mark.accept("collectives"); // the norm rides inside the fused kernel
    } else {
      comm.allReduce(x, count, a, stream);
      mark.accept("collectives");
      ops.addRmsNorm(out, residual, x, weight, rows, hidden, eps);
      mark.accept("norms");
    }
  }

  /**
   * Logits {@code [rows, vocab]} into {@code logits}: this rank's vocabulary slice of the LM head,
   * allgathered from every rank and laid out by vocabulary index.
   */
  void lmHead(GpuOps ops, long logits, long x, DeviceMatrix head, int rows, Consumer<String> mark) {
    ops.linear(localLogits.ptr(), x, head, rows);
    mark.accept("lm_head");
    long per = (long) rows * vocabShare;
    comm.allGather(localLogits.ptr(), gathered.ptr(), per, stream);
    mark.accept("collectives");
    kernels.vocabGather(stream, logits, gathered.ptr(), rows, vocabShare, shard.size());
  }

  /**
   * Expert parallelism without all-to-all: rewrites the {@code n * topK} routed expert ids to this
   * rank's local ids, -1 for other ranks' experts, and zeroes those pairs' output rows {@code y}; a
   * no-op when every rank holds every expert.
   */
  void localizeExperts(long ids, long y, int n, int topK, int hidden) {
    if (localOf != null) {
      kernels.moeLocalize(stream, ids, y, localOf.ptr(), n * topK, hidden);
    }
  }

  @Override
  public void close() {
    localLogits.close();
    gathered.close();
    if (localOf != null) {
      localOf.close();
    }
    kernels.close();
  }
}
