package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.cuda.nccl.Nccl;
import dev.ringmaster.cuda.nccl.NcclUniqueId;
import dev.ringmaster.cuda.nccl.UniqueIdExchange;
import dev.ringmaster.cuda.topology.GpuTopology;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.runtime.ranks.FailurePolicy;
import dev.ringmaster.runtime.ranks.RankGroup;
import dev.ringmaster.runtime.ranks.RankWorker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * This JVM's share of a GPU world: one platform thread per local GPU, each owning one rank's NCCL
 * communicator (and peer-memory allreduce where every pair of local GPUs has peer access, on a
 * single node). Global rank = node rank x GPUs per node + local index. NVLink multicast (NVLS) is
 * turned off unless the environment asks for it: multicast objects left behind can take a shared
 * host's GPUs out of service.
 */
public final class DeviceWorld implements AutoCloseable {

  /**
   * How to form the world.
   *
   * @param gpus GPUs this node drives (the first {@code gpus} CUDA devices)
   * @param dist the nodes and node 0's address ({@link DistInit#singleNode()} for one node)
   * @param algorithm the allreduce algorithm ({@code --allreduce})
   * @param disableCustomAllReduce {@code --disable-custom-all-reduce}: NCCL only
   * @param customMaxBytes the peer kernels' staging buffer size (largest custom message)
   * @param initTimeout how long to wait for the other nodes
   * @param pdl launch the collectives' own kernels as programmatic dependent launches (the run's
   *     {@code KernelTuning.pdl})
   */
  public record Options(
      int gpus,
      DistInit dist,
      AllReduceAlgorithm algorithm,
      boolean disableCustomAllReduce,
      long customMaxBytes,
      Duration initTimeout,
      boolean pdl) {

    /**
     * One node, {@code gpus} GPUs, AUTO, custom allreduce up to 8 MiB, 5 minute timeout,
     * programmatic dependent launch on.
     */
    public static Options of(int gpus) {
      return new Options(
          gpus,
          DistInit.singleNode(),
          AllReduceAlgorithm.AUTO,
          false,
          8 << 20,
          Duration.ofMinutes(5),
          true);
    }

    /** These options with another algorithm and custom setting. */
    public Options with(AllReduceAlgorithm a, boolean disableCustom) {
      return new Options(gpus, dist, a, disableCustom, customMaxBytes, initTimeout, pdl);
    }

    /** These options with the collectives' own kernels launched with PDL or without. */
    public Options withPdl(boolean on) {
      return new Options(
          gpus, dist, algorithm, disableCustomAllReduce, customMaxBytes, initTimeout, on);
    }
  }

  private final Options options;
  private final GpuTopology topology;
  private final List<GpuThread> threads;
  private final RankGroup ranks;
  private final NcclCommunicator[] comms;
  private final AllReduceRule.Facts facts;
  private final String ncclVersion;
  private final List<String> log = new ArrayList<>();

  private DeviceWorld(Options o) {
    this.options = o;
    String nvls = NativeEnv.defaultTo("NCCL_NVLS_ENABLE", "0");
    CudaDriver d = CudaDriver.get();
    d.init();
    int visible = d.deviceCount();
    if (o.gpus() < 1 || o.gpus() > visible) {
      throw new IllegalArgumentException(
          "asked for " + o.gpus() + " GPUs on this node, " + visible + " visible");
    }
    this.topology = GpuTopology.probe().first(o.gpus());
    Nccl nccl = Nccl.get();
    this.ncclVersion = Nccl.versionString(nccl.version());
    log.add("NCCL " + ncclVersion + ", NCCL_NVLS_ENABLE=" + nvls);
    NcclUniqueId id;
    int world;
    try {
      if (o.dist().nodeRank() == 0) {
        id = nccl.uniqueId();
        world = o.dist().nnodes() * o.gpus();
        if (o.dist().nnodes() > 1) {
          try (UniqueIdExchange.Server server =
              UniqueIdExchange.listen(new InetSocketAddress(o.dist().host(), o.dist().port()))) {
            world = server.distribute(o.dist().nnodes(), o.gpus(), id, o.initTimeout());
          }
        }
      } else {
        UniqueIdExchange.Joined j = UniqueIdExchange.join(o.dist(), o.gpus(), o.initTimeout());
        id = j.id();
        world = j.worldSize();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    boolean peer = o.dist().nnodes() == 1 && topology.allPeerAccess(o.gpus());
    this.facts =
        new AllReduceRule.Facts(
            world, topology.pcieOnly(), peer, o.disableCustomAllReduce(), o.customMaxBytes());
    this.threads = new ArrayList<>();
    List<RankWorker> workers = new ArrayList<>();
    for (int i = 0; i < o.gpus(); i++) {
      GpuThread t = GpuThread.start(i);
      threads.add(t);
      workers.add(RankWorker.borrowed(t::execute));
    }
    this.ranks = new RankGroup(workers, FailurePolicy.waitForAll());
    CustomAllReduce custom =
        facts.customPossible()
            ? CustomAllReduce.create(threads, o.customMaxBytes(), o.pdl())
            : null;
    AllReduceRule.Decision defaults = AllReduceRule.defaults(facts);
    log.addAll(defaults.log());
    this.comms = new NcclCommunicator[o.gpus()];
    List<Future<NcclCommunicator>> pending = new ArrayList<>();
    int worldSize = world;
    for (int i = 0; i < o.gpus(); i++) {
      int local = i;
      int rank = o.dist().nodeRank() * o.gpus() + i;
      pending.add(
          threads
              .get(i)
              .submit(
                  () ->
                      new NcclCommunicator(
                          nccl.commInitRank(worldSize, id, rank),
                          rank,
                          worldSize,
                          o.algorithm(),
                          custom == null ? null : custom.rank(local),
                          defaults.table(),
                          o.pdl())));
    }
    for (int i = 0; i < comms.length; i++) {
      comms[i] = await(pending.get(i));
    }
  }

  /** Forms the world (blocks until every node has joined). */
  public static DeviceWorld create(Options options) {
    return new DeviceWorld(options);
  }

  private static <T> T await(Future<T> f) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  /** The options the world was formed with. */
  public Options options() {
    return options;
  }

  /** The topology of this node's GPUs. */
  public GpuTopology topology() {
    return topology;
  }

  /** What the allreduce rule knows. */
  public AllReduceRule.Facts facts() {
    return facts;
  }

  /** NCCL's version, e.g. 2.28.3. */
  public String ncclVersion() {
    return ncclVersion;
  }

  /** What was decided while forming the world (NCCL version, allreduce table and why). */
  public List<String> log() {
    return List.copyOf(log);
  }

  /** GPUs on this node. */
  public int localSize() {
    return threads.size();
  }

  /** Ranks in the world. */
  public int worldSize() {
    return comms[0].worldSize();
  }

  /** Local GPU {@code i}'s thread. */
  public GpuThread gpu(int i) {
    return threads.get(i);
  }

  /** Local GPU {@code i}'s communicator (use on its thread). */
  public NcclCommunicator comm(int i) {
    return comms[i];
  }

  /** Sets the table AUTO uses on every local rank. */
  public void setTable(DeviceAllReduceTable table) {
    for (NcclCommunicator c : comms) {
      c.setTable(table);
    }
  }

  /** Work for one rank, run on its GPU thread. */
  @FunctionalInterface
  public interface RankTask<T> {
    /** Runs on local GPU {@code local}'s thread with its communicator. */
    T run(int local, NcclCommunicator comm) throws Exception;
  }

  /**
   * Runs {@code task} on every local GPU's thread at once (collectives need all ranks) and returns
   * the results by local index; the first failure is rethrown after all have finished, the others
   * suppressed into it.
   */
  public <T> List<T> run(RankTask<T> task) {
    return ranks.all(local -> task.run(local, comms[local]));
  }

  /** Destroys the communicators together (NCCL finalises collectively) and stops the threads. */
  @Override
  public void close() {
    try {
      run(
          (local, c) -> {
            c.close();
            return null;
          });
    } finally {
      ranks.close();
      for (GpuThread t : threads) {
        t.close();
      }
    }
  }
}
