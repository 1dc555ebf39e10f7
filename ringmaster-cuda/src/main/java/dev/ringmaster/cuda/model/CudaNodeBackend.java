package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.multinode.Cluster;
import dev.ringmaster.model.multinode.LocalNode;
import dev.ringmaster.model.multinode.NodeBackend;
import dev.ringmaster.model.multinode.NodeLayout;
import java.net.InetAddress;
import java.nio.file.Path;

/**
 * A node's GPU ranks for a multi-node run: a {@link TensorParallelCudaLm} over this node's {@code
 * tp-size / nnodes} GPUs, whose NCCL communicators span every node (global rank = node rank x GPUs
 * per node + local index). NCCL's unique id travels through {@link DistInit}'s exchange on {@code
 * --dist-init-addr}'s port + 1, once the control plane (on the port itself) has checked that the
 * nodes agree.
 *
 * <p>NCCL cannot be woken from another thread the way a socket can, so when another node fails in
 * the middle of a step this node's ranks may stay blocked in a collective; node 0 still reports the
 * failed node (after a grace period) and the process exit ends them.
 */
public final class CudaNodeBackend implements NodeBackend {
  private final Path dir;
  private final CudaModelOptions options;
  private final ParallelConfig parallel;
  private final DeviceWorld.Options world;

  /**
   * The model in {@code dir} on this node's GPUs, split as {@code parallel} over all nodes; {@code
   * world} gives the allreduce settings (its GPU count and node layout are replaced by this
   * node's).
   */
  public CudaNodeBackend(
      Path dir, CudaModelOptions options, ParallelConfig parallel, DeviceWorld.Options world) {
    this.dir = dir;
    this.options = options;
    this.parallel = parallel;
    this.world = world;
  }

  @Override
  public int bind(InetAddress local) {
    return 0; // the ranks meet through NCCL's own bootstrap
  }

  @Override
  public LocalNode load(Cluster cluster) {
    NodeLayout layout = cluster.layout();
    int local = layout.localRanks(parallel.tpSize());
    DistInit dist =
        new DistInit(layout.nnodes(), layout.nodeRank(), layout.host(), layout.port() + 1);
    DeviceWorld.Options o =
        new DeviceWorld.Options(
            local,
            dist,
            world.algorithm(),
            world.disableCustomAllReduce(),
            world.customMaxBytes(),
            layout.timeout(),
            options.pdl());
    TensorParallelCudaLm model = TensorParallelCudaLm.load(dir, options, parallel, o);
    return new LocalNode(model, cause -> {}, null);
  }

  @Override
  public String describe() {
    return "GPU ranks over NCCL (--tp-size " + parallel.tpSize() + ")";
  }
}
