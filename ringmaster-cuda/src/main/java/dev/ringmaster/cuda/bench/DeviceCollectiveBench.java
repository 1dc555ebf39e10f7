package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.cuda.collective.AllReduceTuner;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.collective.NcclCommunicator;
import dev.ringmaster.cuda.collective.RankTimer;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.bench.BenchmarkOptions;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.parallel.bench.CollectiveBenchmark;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code bench collectives --device cuda}: nccl-tests-style timings of NCCL and the peer-memory
 * kernels on this node's GPUs, in the CPU benchmark's {@link BenchmarkResult} form (same table and
 * JSON). Inputs are small integers so every sum is exact and each result is checked against a CPU
 * reference; the fused allreduce + add + RMSNorm is checked within a tolerance instead.
 */
public final class DeviceCollectiveBench {
  private static final int FUSED_HIDDEN = 4096;
  private static final float EPS = 1e-6f;

  private DeviceCollectiveBench() {}

  /** The allreduce series {@code --device cuda} compares by default. */
  public static List<AllReduceAlgorithm> defaultAlgorithms() {
    return List.of(
        AllReduceAlgorithm.NCCL,
        AllReduceAlgorithm.ONESHOT,
        AllReduceAlgorithm.TWOSHOT,
        AllReduceAlgorithm.FUSED,
        AllReduceAlgorithm.AUTO);
  }

  /**
   * Runs the sizes and algorithms of {@code o} on {@code world}, each point timed over batches of
   * back-to-back collectives ({@link RankTimer#batchFor}), replayed from a CUDA graph per rank when
   * {@code graph}.
   */
  public static List<BenchmarkResult> run(DeviceWorld world, BenchmarkOptions o, boolean graph) {
    List<BenchmarkResult> out = new ArrayList<>();
    List<AllReduceAlgorithm> algos =
        o.op() == CollectiveOp.ALL_REDUCE
            ? o.algorithms()
            : Arrays.asList((AllReduceAlgorithm) null);
    for (AllReduceAlgorithm a : algos) {
      for (long bytes = o.minBytes(); bytes <= o.maxBytes(); bytes *= 2) {
        if (a != null
            && a != AllReduceAlgorithm.NCCL
            && a != AllReduceAlgorithm.AUTO
            && !world.comm(0).hasCustom()) {
          continue; // peer kernels unavailable here: NCCL would run under their name
        }
        out.add(point(world, o, a, bytes, graph));
      }
    }
    return out;
  }

  private static int count(CollectiveOp op, int n, long bytes) {
    long c =
        op == CollectiveOp.ALL_REDUCE || op == CollectiveOp.BROADCAST ? bytes / 4 : bytes / 4 / n;
    return (int) Math.max(1, c);
  }

  private static long bytes(CollectiveOp op, int n, int count) {
    return op == CollectiveOp.ALL_REDUCE || op == CollectiveOp.BROADCAST
        ? 4L * count
        : 4L * count * n;
  }

  static float value(int rank, long i) {
    return (float) ((i * 7 + rank * 3L) % 17 - 8);
  }

  private static float[] values(int rank, int len, int salt) {
    float[] v = new float[len];
    for (int i = 0; i < len; i++) {
      v[i] = value(rank + salt, i);
    }
    return v;
  }

  /** One rank's buffers for one point. */
  private record Bufs(
      CudaStream stream,
      DeviceBuffer pristine,
      DeviceBuffer work,
      DeviceBuffer out,
      DeviceBuffer residual0,
      DeviceBuffer residual,
      DeviceBuffer weight) {
    void close() {
      for (DeviceBuffer b : new DeviceBuffer[] {pristine, work, out, residual0, residual, weight}) {
        if (b != null) {
          b.close();
        }
      }
      stream.close();
    }
  }

  private static BenchmarkResult point(
      DeviceWorld world,
      BenchmarkOptions o,
      AllReduceAlgorithm algo,
      long requestedBytes,
      boolean graph) {
    CollectiveOp op = o.op();
    int n = world.worldSize();
    int local = world.localSize();
    int count = count(op, n, requestedBytes);
    boolean fused = algo == AllReduceAlgorithm.FUSED;
    int hidden = Math.min(count, FUSED_HIDDEN);
    if (fused) {
      count = count / hidden * hidden;
    }
    int rows = count / hidden;
    int inLen =
        op == CollectiveOp.REDUCE_SCATTER || op == CollectiveOp.ALL_TO_ALL ? count * n : count;
    int outLen = op == CollectiveOp.ALL_GATHER || op == CollectiveOp.ALL_TO_ALL ? count * n : count;
    int c = count;
    Map<Integer, Bufs> bufs = new HashMap<>();
    world.run(
        (l, comm) -> {
          CudaStream s = CudaStream.create();
          int r = comm.rank();
          DeviceBuffer pristine = DeviceBuffer.allocate(4L * inLen);
          pristine.upload(s, values(r, inLen, 0));
          DeviceBuffer work = DeviceBuffer.allocate(4L * inLen);
          DeviceBuffer outBuf = DeviceBuffer.allocate(4L * outLen);
          DeviceBuffer res0 = null;
          DeviceBuffer res = null;
          DeviceBuffer w = null;
          if (fused) {
            res0 = DeviceBuffer.allocate(4L * c);
            res0.upload(s, values(0, c, 5)); // same residual on every rank, as after an allreduce
            res = DeviceBuffer.allocate(4L * c);
            w = DeviceBuffer.allocate(4L * hidden);
            w.upload(s, weights(hidden));
          }
          s.synchronize();
          synchronized (bufs) {
            bufs.put(l, new Bufs(s, pristine, work, outBuf, res0, res, w));
          }
          return null;
        });
    List<CudaStream> streams = new ArrayList<>();
    for (int l = 0; l < local; l++) {
      streams.add(bufs.get(l).stream());
    }
    CudaDriver d = CudaDriver.get();
    RankTimer.Step prepare =
        (l, comm, s) -> {
          Bufs b = bufs.get(l);
          if (op == CollectiveOp.ALL_REDUCE || op == CollectiveOp.BROADCAST) {
            d.memcpyDtoDAsync(b.work().ptr(), b.pristine().ptr(), 4L * c, s.handle());
          }
          if (fused) {
            d.memcpyDtoDAsync(b.residual().ptr(), b.residual0().ptr(), 4L * c, s.handle());
          }
        };
    RankTimer.Step step =
        (l, comm, s) -> {
          Bufs b = bufs.get(l);
          switch (op) {
            case ALL_REDUCE -> {
              if (fused) {
                comm.allReduceAddRmsNorm(
                    b.work().ptr(),
                    b.residual().ptr(),
                    b.out().ptr(),
                    b.weight().ptr(),
                    rows,
                    hidden,
                    EPS,
                    s);
              } else {
                comm.allReduce(b.work().ptr(), c, algo, s);
              }
            }
            case ALL_GATHER -> comm.allGather(b.pristine().ptr(), b.out().ptr(), c, s);
            case REDUCE_SCATTER -> comm.reduceScatter(b.pristine().ptr(), b.out().ptr(), c, s);
            case ALL_TO_ALL -> {
              long[] counts = new long[n];
              Arrays.fill(counts, c);
              comm.allToAll(b.pristine().ptr(), counts, b.out().ptr(), counts, s);
            }
            case BROADCAST -> comm.broadcast(b.work().ptr(), c, 0, s);
            case BARRIER -> throw new IllegalArgumentException("barrier is not benchmarked");
          }
        };
    double us;
    boolean correct;
    try {
      us =
          RankTimer.medianMicros(
              world,
              streams,
              prepare,
              step,
              o.warmupIterations(),
              o.iterations(),
              RankTimer.batchFor(requestedBytes),
              graph);
      List<Boolean> ok =
          world.run(
              (l, comm) -> {
                Bufs b = bufs.get(l);
                CudaStream s = b.stream();
                prepare.run(l, comm, s);
                step.run(l, comm, s);
                return check(op, fused, comm, b, c, n, rows, hidden);
              });
      correct = ok.stream().allMatch(Boolean::booleanValue);
    } finally {
      world.run(
          (l, comm) -> {
            bufs.get(l).stream().synchronize();
            bufs.get(l).close();
            return null;
          });
    }
    long b = bytes(op, n, count);
    double algbw = b / (us * 1e-6) / 1e9;
    return new BenchmarkResult(
        op, algo, n, b, us, algbw, algbw * op.busBandwidthFactor(n), correct);
  }

  private static float[] weights(int hidden) {
    float[] w = new float[hidden];
    for (int i = 0; i < hidden; i++) {
      w[i] = 0.5f + (i % 7) * 0.125f;
    }
    return w;
  }

  private static boolean check(
      CollectiveOp op,
      boolean fused,
      NcclCommunicator comm,
      Bufs b,
      int c,
      int n,
      int rows,
      int hidden) {
    int r = comm.rank();
    CudaStream s = b.stream();
    if (fused) {
      float[] res = b.residual().downloadFloats(s, c);
      float[] got = b.out().downloadFloats(s, c);
      float[] w = weights(hidden);
      float[] res0 = values(0, c, 5);
      for (int row = 0; row < rows; row++) {
        double ss = 0;
        float[] v = new float[hidden];
        for (int k = 0; k < hidden; k++) {
          int i = row * hidden + k;
          v[k] = res0[i] + sumOverRanks(n, i);
          if (res[i] != v[k]) {
            return false;
          }
          ss += (double) v[k] * v[k];
        }
        double inv = 1.0 / Math.sqrt(ss / hidden + EPS);
        for (int k = 0; k < hidden; k++) {
          double want = w[k] * v[k] * inv;
          if (Math.abs(got[row * hidden + k] - want) > 1e-4 * Math.max(1, Math.abs(want))) {
            return false;
          }
        }
      }
      return true;
    }
    DeviceBuffer result =
        op == CollectiveOp.ALL_REDUCE || op == CollectiveOp.BROADCAST ? b.work() : b.out();
    int len = op == CollectiveOp.ALL_GATHER || op == CollectiveOp.ALL_TO_ALL ? c * n : c;
    float[] got = result.downloadFloats(s, len);
    for (int i = 0; i < len; i++) {
      float want =
          switch (op) {
            case ALL_REDUCE -> sumOverRanks(n, i);
            case REDUCE_SCATTER -> sumOverRanks(n, (long) r * c + i);
            case ALL_GATHER -> value(i / c, i % c);
            case ALL_TO_ALL -> value(i / c, (long) r * c + i % c);
            case BROADCAST -> value(0, i);
            case BARRIER -> 0;
          };
      if (got[i] != want) {
        return false;
      }
    }
    return true;
  }

  private static float sumOverRanks(int n, long i) {
    float sum = 0;
    for (int r = 0; r < n; r++) {
      sum += value(r, i);
    }
    return sum;
  }

  /**
   * Command line: {@code key=value} arguments {@code world} (GPUs, default all), {@code op}
   * (ALL_REDUCE), {@code algorithms} (comma-separated), {@code min}/{@code max} bytes (K, M
   * suffixes), {@code warmup}, {@code iters}, {@code out} (a folder for the JSON), {@code tune}
   * (true: measure or load the AUTO table first), {@code disableCustom}, {@code graph} (true:
   * replay each timed batch from a CUDA graph).
   */
  public static void main(String[] args) throws IOException {
    Map<String, String> kv = new HashMap<>();
    for (String a : args) {
      int eq = a.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("expected key=value, got " + a);
      }
      kv.put(a.substring(0, eq), a.substring(eq + 1));
    }
    CudaDriver.get().init();
    int gpus =
        Integer.parseInt(kv.getOrDefault("world", String.valueOf(CudaDriver.get().deviceCount())));
    CollectiveOp op =
        CollectiveOp.valueOf(kv.getOrDefault("op", "ALL_REDUCE").toUpperCase(Locale.ROOT));
    List<AllReduceAlgorithm> algos =
        kv.containsKey("algorithms")
            ? Arrays.stream(kv.get("algorithms").split(","))
                .map(s -> AllReduceAlgorithm.valueOf(s.trim().toUpperCase(Locale.ROOT)))
                .toList()
            : defaultAlgorithms();
    BenchmarkOptions o =
        new BenchmarkOptions(
            gpus,
            op,
            algos,
            parseBytes(kv.getOrDefault("min", "1K")),
            parseBytes(kv.getOrDefault("max", "64M")),
            Integer.parseInt(kv.getOrDefault("warmup", "5")),
            Integer.parseInt(kv.getOrDefault("iters", "20")),
            1);
    boolean disableCustom = Boolean.parseBoolean(kv.getOrDefault("disableCustom", "false"));
    PrintStream log = System.out;
    try (DeviceWorld world =
        DeviceWorld.create(
            DeviceWorld.Options.of(gpus).with(AllReduceAlgorithm.AUTO, disableCustom))) {
      log.print(world.topology().format());
      world.log().forEach(l -> log.println("world: " + l));
      if (Boolean.parseBoolean(kv.getOrDefault("tune", "true"))) {
        AllReduceTuner.tuneOrLoad(world, AllReduceTableCache.standard(), log);
      }
      List<BenchmarkResult> results =
          run(world, o, Boolean.parseBoolean(kv.getOrDefault("graph", "false")));
      log.print(CollectiveBenchmark.formatTable(results));
      if (kv.containsKey("out")) {
        Path dir = Path.of(kv.get("out"));
        Files.createDirectories(dir);
        String name =
            "collectives-cuda-" + op.name().toLowerCase(Locale.ROOT) + "-n" + gpus + ".json";
        Files.writeString(dir.resolve(name), CollectiveBenchmark.toJson(results));
        log.println("wrote " + dir.resolve(name));
      }
      if (!results.stream().allMatch(BenchmarkResult::correct)) {
        System.exit(1);
      }
    }
  }

  static long parseBytes(String s) {
    String t = s.trim().toUpperCase(Locale.ROOT);
    long mult = 1;
    if (t.endsWith("K")) {
      mult = 1L << 10;
    } else if (t.endsWith("M")) {
      mult = 1L << 20;
    } else if (t.endsWith("G")) {
      mult = 1L << 30;
    }
    if (mult > 1) {
      t = t.substring(0, t.length() - 1);
    }
    return Long.parseLong(t) * mult;
  }
}
