package dev.ringmaster.model.multinode;

import dev.ringmaster.backend.cpu.model.ParallelCausalLm;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.AllReduceTable;
import dev.ringmaster.parallel.tcp.TcpWorld;
import dev.ringmaster.parallel.tcp.TcpWorldConfig;
import dev.ringmaster.runtime.KernelTuning;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;

/**
 * A node's CPU ranks: a {@link ParallelCausalLm} over this node's share of a {@link TcpWorld},
 * whose collectives run over TCP to every other node's ranks.
 */
public final class CpuNodeBackend implements NodeBackend {
  private final Path dir;
  private final ParallelConfig parallel;
  private final AllReduceAlgorithm algorithm;
  private final KernelTuning tuning;
  private volatile TcpWorld.Endpoint endpoint;

  /**
   * The model in {@code dir}, split as {@code parallel} over all nodes, reducing with {@code
   * algorithm}, with the default CPU kernel settings.
   */
  public CpuNodeBackend(Path dir, ParallelConfig parallel, AllReduceAlgorithm algorithm) {
    this(dir, parallel, algorithm, KernelTuning.defaults());
  }

  /**
   * The model in {@code dir}, split as {@code parallel} over all nodes, reducing with {@code
   * algorithm}; this node's ranks run the CPU kernels as {@code tuning} says ({@code
   * cpu-vector-bits}, {@code cpu-threads}).
   */
  public CpuNodeBackend(
      Path dir, ParallelConfig parallel, AllReduceAlgorithm algorithm, KernelTuning tuning) {
    this.tuning = tuning;
    this.dir = dir;
    this.parallel = parallel;
    this.algorithm = algorithm;
  }

  @Override
  public int bind(InetAddress local) throws IOException {
    endpoint = TcpWorld.listen(local);
    return endpoint.port();
  }

  @Override
  public LocalNode load(Cluster cluster) throws Exception {
    NodeLayout layout = cluster.layout();
    TcpWorldConfig cfg =
        new TcpWorldConfig(
            parallel.tpSize(),
            layout.nnodes(),
            algorithm,
            AllReduceTable.defaults(),
            layout.timeout());
    TcpWorld world =
        TcpWorld.connect(
            endpoint, cfg, layout.nodeRank(), cluster.dataAddresses(), cluster.session());
    try {
      ParallelCausalLm model = ParallelCausalLm.load(dir, parallel, world, tuning);
      return new LocalNode(model, cause -> world.abort(-1, cause), world);
    } catch (RuntimeException | Error e) {
      world.close();
      throw e;
    }
  }

  @Override
  public void cancel() {
    TcpWorld.Endpoint e = endpoint;
    if (e != null) {
      e.cancel();
    }
  }

  @Override
  public String describe() {
    return "CPU ranks over TCP collectives (--tp-size " + parallel.tpSize() + ")";
  }
}
