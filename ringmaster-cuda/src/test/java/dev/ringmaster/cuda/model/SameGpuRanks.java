package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.collective.CustomAllReduce;
import dev.ringmaster.cuda.collective.DeviceCommunicator;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code n} GPU threads on GPU 0 with {@link SameDeviceCommunicator}s over one context: ranks of a
 * parallel model on a machine with one GPU (tests).
 */
final class SameGpuRanks implements AutoCloseable {
  final List<GpuThread> threads = new ArrayList<>();
  final List<DeviceCommunicator> comms = new ArrayList<>();
  private final CustomAllReduce custom;

  /** {@code n} ranks reducing with {@code a} (ONESHOT, TWOSHOT or FUSED). */
  SameGpuRanks(int n, AllReduceAlgorithm a) {
    for (int i = 0; i < n; i++) {
      threads.add(GpuThread.start(0));
    }
    custom = CustomAllReduce.create(threads, 8 << 20);
    SameDeviceCommunicator.Group group = new SameDeviceCommunicator.Group(n);
    for (int i = 0; i < n; i++) {
      SameDeviceCommunicator c = new SameDeviceCommunicator(i, n, custom.rank(i), a, group);
      threads.get(i).run(c::allocateBarrier);
      comms.add(c);
    }
  }

  @Override
  public void close() {
    for (int i = 0; i < threads.size(); i++) {
      CustomAllReduce.Rank r = custom.rank(i);
      DeviceCommunicator c = comms.get(i);
      threads
          .get(i)
          .run(
              () -> {
                c.close();
                r.close();
              });
    }
    threads.forEach(GpuThread::close);
  }
}
