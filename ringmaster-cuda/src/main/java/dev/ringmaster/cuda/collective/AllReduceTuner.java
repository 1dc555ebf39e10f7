package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.topology.GpuTopology;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Measures NCCL against the peer-memory kernels on this host at first start, keeps the table in the
 * {@link AllReduceTableCache}, and installs it on every rank. The decision and its numbers go to
 * the log stream.
 */
public final class AllReduceTuner {
  private static final int WARMUP = 5;
  private static final int ITERATIONS = 20;

  /**
   * How the table was measured, part of the cache key so a table timed another way is measured
   * again: 2 = batches replayed from CUDA graphs ({@link RankTimer}).
   */
  private static final int METHOD = 2;

  private AllReduceTuner() {}

  /** Everything the measured table depends on, for the cache key. */
  public static String key(DeviceWorld world) {
    return key(world.topology(), world.ncclVersion(), world.facts());
  }

  /**
   * The key from its parts, for a lookup without forming a world ({@code doctor}): {@code topology}
   * of the world's GPUs, NCCL's version string and the rule's facts.
   */
  public static String key(GpuTopology topology, String ncclVersion, AllReduceRule.Facts f) {
    return topology.signature()
        + "|method="
        + METHOD
        + "|nccl="
        + ncclVersion
        + "|world="
        + f.worldSize()
        + "|custom="
        + f.customPossible()
        + "|max="
        + f.customMaxBytes();
  }

  /**
   * Installs the cached table when its key matches, else measures, stores and installs a new one.
   * Without peer kernels there is nothing to choose: NCCL, no measurement.
   */
  public static DeviceAllReduceTable tuneOrLoad(
      DeviceWorld world, AllReduceTableCache cache, PrintStream log) {
    AllReduceRule.Facts f = world.facts();
    if (!f.customPossible()) {
      AllReduceRule.Decision d = AllReduceRule.defaults(f);
      d.log().forEach(l -> log.println("allreduce: " + l));
      world.setTable(d.table());
      return d.table();
    }
    String key = key(world);
    AllReduceTableCache.Lookup hit = cache.lookup(f.worldSize(), key);
    if (hit instanceof AllReduceTableCache.Hit h) {
      log.println(
          "allreduce: cached table " + cache.file(f.worldSize()) + ": " + h.entry().table());
      h.entry().log().forEach(l -> log.println("allreduce:   " + l));
      world.setTable(h.entry().table());
      return h.entry().table();
    }
    log.println("allreduce: " + ((AllReduceTableCache.Miss) hit).reason() + "; measuring");
    List<AllReduceRule.Measurement> ms = measure(world, 1 << 10, f.customMaxBytes());
    AllReduceRule.Decision d = AllReduceRule.choose(f, ms);
    d.log().forEach(l -> log.println("allreduce:   " + l));
    log.println("allreduce: table " + d.table());
    try {
      cache.store(f.worldSize(), new AllReduceTableCache.Entry(key, d.table(), ms, d.log()));
    } catch (IOException e) {
      log.println("allreduce: could not cache the table: " + e.getMessage());
    }
    world.setTable(d.table());
    return d.table();
  }

  /**
   * Times NCCL, one-shot and two-shot at sizes from {@code minBytes} to {@code maxBytes} (x4), in
   * batches replayed from CUDA graphs as the decode steps that use the table run them.
   */
  public static List<AllReduceRule.Measurement> measure(
      DeviceWorld world, long minBytes, long maxBytes) {
    int n = world.localSize();
    List<CudaStream> streams = new ArrayList<>();
    List<DeviceBuffer> bufs = new ArrayList<>();
    world.run(
        (local, c) -> {
          CudaStream s = CudaStream.create();
          DeviceBuffer b = DeviceBuffer.allocate(maxBytes);
          b.zero(s);
          s.synchronize();
          synchronized (streams) {
            while (streams.size() < n) {
              streams.add(null);
              bufs.add(null);
            }
            streams.set(local, s);
            bufs.set(local, b);
          }
          return null;
        });
    List<AllReduceRule.Measurement> out = new ArrayList<>();
    try {
      for (long bytes = minBytes; bytes <= maxBytes; bytes *= 4) {
        long count = bytes / 4;
        for (AllReduceAlgorithm a :
            List.of(
                AllReduceAlgorithm.NCCL, AllReduceAlgorithm.ONESHOT, AllReduceAlgorithm.TWOSHOT)) {
          double us =
              RankTimer.medianMicros(
                  world,
                  streams,
                  (l, c, s) -> {},
                  (l, c, s) -> c.allReduce(bufs.get(l).ptr(), count, a, s),
                  WARMUP,
                  ITERATIONS,
                  RankTimer.batchFor(bytes),
                  true);
          out.add(new AllReduceRule.Measurement(bytes, a, us));
        }
      }
    } finally {
      world.run(
          (local, c) -> {
            streams.get(local).synchronize();
            bufs.get(local).close();
            streams.get(local).close();
            return null;
          });
    }
    return out;
  }
}
