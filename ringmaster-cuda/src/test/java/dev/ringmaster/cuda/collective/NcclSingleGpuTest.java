package dev.ringmaster.cuda.collective;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.nccl.Nccl;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * NCCL with one rank, eagerly and captured into CUDA graphs (allreduce, allgather, all-to-all); the
 * peer kernels with one rank.
 */
@Tag("gpu")
class NcclSingleGpuTest {
  private static DeviceWorld world;

  @BeforeAll
  static void start() {
    world = DeviceWorld.create(DeviceWorld.Options.of(1));
    System.out.println(world.topology().format());
    world.log().forEach(l -> System.out.println("world: " + l));
  }

  @AfterAll
  static void stop() {
    if (world != null) {
      world.close();
    }
  }

  @Test
  void versionIsTwoPointSomething() {
    int v = Nccl.get().version();
    assertThat(Nccl.versionString(v)).startsWith("2.");
  }

  @Test
  void allReduceOfOneRankReturnsTheInput() {
    float[] x = new Rand().uniform(100_003, 1f);
    world.run(
        (l, c) -> {
          try (CudaStream s = CudaStream.create();
              DeviceBuffer b = DeviceBuffer.allocate(4L * x.length)) {
            b.upload(s, x);
            c.allReduce(b.ptr(), x.length, AllReduceAlgorithm.NCCL, s);
            CollectiveReference.assertExact(
                "nccl allreduce, one rank", b.downloadFloats(s, x.length), x);
            c.checkHealth();
          }
          return null;
        });
  }

  @Test
  void capturedAllReduceReplaysOnFreshInputs() {
    Rand r = new Rand();
    int n = 65_537;
    world.run(
        (l, c) -> {
          try (CudaStream s = CudaStream.create();
              DeviceBuffer b = DeviceBuffer.allocate(4L * n);
              DeviceBuffer out = DeviceBuffer.allocate(4L * n)) {
            b.upload(s, r.uniform(n, 1f));
            c.allReduce(b.ptr(), n, AllReduceAlgorithm.NCCL, s); // eager warm-up before capture
            s.synchronize();
            try (CudaGraph g =
                s.capture(
                    () -> {
                      c.allReduce(b.ptr(), n, AllReduceAlgorithm.NCCL, s);
                      c.allGather(b.ptr(), out.ptr(), n, s);
                    })) {
              for (int replay = 0; replay < 3; replay++) {
                float[] x = r.uniform(n, 1f);
                b.upload(s, x);
                g.launch(s);
                CollectiveReference.assertExact(
                    "graph replay: allreduce", b.downloadFloats(s, n), x);
                CollectiveReference.assertExact(
                    "graph replay: allgather", out.downloadFloats(s, n), x);
              }
            }
          }
          return null;
        });
  }

  /**
   * A one-rank all-to-all (an NCCL group of a send to and a receive from itself, as the expert
   * dispatch issues it) captured into a graph, replayed on fresh inputs.
   */
  @Test
  void capturedAllToAllReplaysOnFreshInputs() {
    Rand r = new Rand();
    int n = 10_007;
    long[] counts = {n};
    world.run(
        (l, c) -> {
          try (CudaStream s = CudaStream.create();
              DeviceBuffer in = DeviceBuffer.allocate(4L * n);
              DeviceBuffer out = DeviceBuffer.allocate(4L * n)) {
            in.upload(s, r.uniform(n, 1f));
            c.allToAll(in.ptr(), counts, out.ptr(), counts, s); // eager warm-up before capture
            s.synchronize();
            try (CudaGraph g =
                s.capture(() -> c.allToAll(in.ptr(), counts, out.ptr(), counts, s))) {
              for (int replay = 0; replay < 3; replay++) {
                float[] x = r.uniform(n, 1f);
                in.upload(s, x);
                out.poison(s);
                g.launch(s);
                CollectiveReference.assertExact(
                    "graph replay: all-to-all", out.downloadFloats(s, n), x);
              }
            }
            c.checkHealth();
          }
          return null;
        });
  }

  @Test
  void otherCollectivesOfOneRank() {
    float[] x = new Rand().uniform(4099, 1f);
    world.run(
        (l, c) -> {
          try (CudaStream s = CudaStream.create();
              DeviceBuffer in = DeviceBuffer.allocate(4L * x.length);
              DeviceBuffer out = DeviceBuffer.allocate(4L * x.length)) {
            in.upload(s, x);
            c.reduceScatter(in.ptr(), out.ptr(), x.length, s);
            CollectiveReference.assertExact(
                "reducescatter, one rank", out.downloadFloats(s, x.length), x);
            out.poison(s);
            c.allToAll(in.ptr(), new long[] {x.length}, out.ptr(), new long[] {x.length}, s);
            CollectiveReference.assertExact(
                "all-to-all, one rank", out.downloadFloats(s, x.length), x);
            c.broadcast(in.ptr(), x.length, 0, s);
            CollectiveReference.assertExact(
                "broadcast, one rank", in.downloadFloats(s, x.length), x);
            c.barrier();
          }
          return null;
        });
  }

  /** The peer kernels with one rank: the barrier degenerates, the arithmetic does not. */
  @Test
  void peerKernelsOfOneRankInAGraph() {
    CustomAllReduce custom = CustomAllReduce.create(List.of(world.gpu(0)), 1 << 22);
    Rand r = new Rand();
    int rows = 7;
    int hidden = 2050;
    int n = rows * hidden;
    float eps = 1e-6f;
    world
        .gpu(0)
        .run(
            () -> {
              CustomAllReduce.Rank k = custom.rank(0);
              try (CudaStream s = CudaStream.create();
                  DeviceBuffer b = DeviceBuffer.allocate(4L * n);
                  DeviceBuffer res = DeviceBuffer.allocate(4L * n);
                  DeviceBuffer out = DeviceBuffer.allocate(4L * n);
                  DeviceBuffer w = DeviceBuffer.allocate(4L * hidden)) {
                float[] weight = r.uniform(hidden, 1f);
                w.upload(s, weight);
                for (int count : new int[] {1, 3, 5, 1023, n}) {
                  float[] x = r.uniform(count, 1f);
                  for (AllReduceAlgorithm a :
                      List.of(AllReduceAlgorithm.ONESHOT, AllReduceAlgorithm.TWOSHOT)) {
                    b.upload(s, x);
                    k.allReduce(b.ptr(), count, a, s);
                    CollectiveReference.assertExact(
                        String.format("%s %d", a, count), b.downloadFloats(s, count), x);
                  }
                }
                float[] x = r.uniform(n, 1f);
                float[] res0 = r.uniform(n, 1f);
                b.upload(s, x);
                s.synchronize();
                try (CudaGraph g =
                    s.capture(
                        () ->
                            k.allReduceAddRmsNorm(
                                b.ptr(), res.ptr(), out.ptr(), w.ptr(), rows, hidden, eps, s))) {
                  for (int replay = 0; replay < 3; replay++) {
                    res.upload(s, res0);
                    g.launch(s);
                    float[] wantRes = res0.clone();
                    float[] want =
                        CollectiveReference.addRmsNorm(x, wantRes, weight, rows, hidden, eps);
                    CollectiveReference.assertExact(
                        "fused: residual", res.downloadFloats(s, n), wantRes);
                    Compare.assertClose("fused out", out.downloadFloats(s, n), want, 1e-5);
                  }
                }
              } finally {
                k.close();
              }
            });
  }
}
