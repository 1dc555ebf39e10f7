package dev.ringmaster.parallel.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.LocalWorld;
import dev.ringmaster.parallel.LocalWorldConfig;
import dev.ringmaster.parallel.ProcessGroup;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Times collectives of an in-process world across message sizes, like nccl-tests: for each
 * algorithm and each size (doubling from min to max) it runs warm-up iterations, then timed ones
 * separated by barriers; an iteration's time is the slowest rank's, and each point's time is the
 * median over iterations, with algbw = bytes / time and busbw = algbw x the operation's bus factor.
 * Every rank's final result is checked.
 *
 * <p>With several trials ({@link TrialPolicy}) the points are measured in rounds, each round one
 * trial of every point still in need, so that a point's trials spread over the whole run; the
 * smallest trial median that a second trial confirms is reported, and all of them are kept in the
 * result.
 *
 * <p>Ranks are threads: the figures measure memory bandwidth and thread synchronisation on this
 * host (and are thread-contention numbers when ranks outnumber cores), not interconnect bandwidth.
 */
public final class CollectiveBenchmark {
  private static final int JIT_WARMUP_ITERATIONS = 500;

  private CollectiveBenchmark() {}

  /** Runs the benchmark; results are ordered by algorithm, then size. */
  public static List<BenchmarkResult> run(BenchmarkOptions options) {
    List<AllReduceAlgorithm> algorithms =
        options.op() == CollectiveOp.ALL_REDUCE
            ? options.algorithms()
            : Collections.singletonList(null);
    int[] counts = counts(options);
    // points by size, then algorithm: for each size every algorithm in turn, so that slow drift
    // of the machine (JIT, other load) does not favour whichever algorithm happens to run last
    List<Point> points = new ArrayList<>();
    for (int s = 0; s < counts.length; s++) {
      for (int a = 0; a < algorithms.size(); a++) {
        points.add(new Point(a, algorithms.get(a), counts[s]));
      }
    }
    LocalWorld world =
        LocalWorld.create(
            LocalWorldConfig.of(options.worldSize(), AllReduceAlgorithm.AUTO)
                .withChunkElements(options.chunkElements()));
    Map<Point, List<Double>> trials = new HashMap<>();
    Map<Point, Boolean> correct = new HashMap<>();
    for (Point p : points) {
      trials.put(p, new ArrayList<>());
      correct.put(p, true);
    }
    // one trial of every point still in need per round: a point's trials spread over the run
    for (int round = 0; ; round++) {
      List<Point> todo =
          points.stream()
              .filter(p -> TrialPolicy.needsAnother(trials.get(p), options.trials()))
              .toList();
      if (todo.isEmpty()) {
        break;
      }
      List<AllReduceAlgorithm> warm = round == 0 ? algorithms : List.of();
      List<RoundTimes> perRank = world.call(group -> measure(group, options, todo, warm));
      for (int i = 0; i < todo.size(); i++) {
        Point p = todo.get(i);
        long[] slowest = new long[options.iterations()];
        for (RoundTimes t : perRank) {
          for (int k = 0; k < slowest.length; k++) {
            slowest[k] = Math.max(slowest[k], t.nanos()[i][k]);
          }
          correct.merge(p, t.correct()[i], Boolean::logicalAnd);
        }
        trials.get(p).add(median(slowest) * 1e-3);
      }
    }
    List<BenchmarkResult> results = new ArrayList<>();
    points.stream()
        .sorted(Comparator.comparingInt(Point::index).thenComparingInt(Point::count))
        .forEach(p -> results.add(result(options, p, trials.get(p), correct.get(p))));
    return results;
  }

  /** One benchmarked point: algorithm (its index in the options) and element count. */
  private record Point(int index, AllReduceAlgorithm algorithm, int count) {}

  /** Element counts for the doubling sizes, without the repeats rounding produces. */
  private static int[] counts(BenchmarkOptions o) {
    List<Integer> counts = new ArrayList<>();
    for (long bytes = o.minBytes(); bytes <= o.maxBytes(); bytes *= 2) {
      int c = Workload.count(o.op(), o.worldSize(), bytes);
      if (counts.isEmpty() || counts.getLast() != c) {
        counts.add(c);
      }
    }
    return counts.stream().mapToInt(Integer::intValue).toArray();
  }

  /** One rank's timings of a round, [point][iteration], and checks, [point]. */
  private record RoundTimes(long[][] nanos, boolean[] correct) {}

  private static RoundTimes measure(
      ProcessGroup group, BenchmarkOptions o, List<Point> points, List<AllReduceAlgorithm> warm) {
    long[][] nanos = new long[points.size()][o.iterations()];
    boolean[] correct = new boolean[points.size()];
    // compile the hot paths (first round) before anything is timed
    for (AllReduceAlgorithm algorithm : warm) {
      Workload jit = new Workload(group, o.op(), algorithm, points.getFirst().count());
      for (int i = 0; i < JIT_WARMUP_ITERATIONS; i++) {
        jit.prepare();
        jit.execute();
      }
    }
    for (int p = 0; p < points.size(); p++) {
      Workload w = new Workload(group, o.op(), points.get(p).algorithm(), points.get(p).count());
      for (int i = 0; i < o.warmupIterations(); i++) {
        w.prepare();
        w.execute();
      }
      for (int i = 0; i < o.iterations(); i++) {
        w.prepare();
        group.barrier();
        long start = System.nanoTime();
        w.execute();
        nanos[p][i] = System.nanoTime() - start;
      }
      correct[p] = w.check();
    }
    return new RoundTimes(nanos, correct);
  }

  private static BenchmarkResult result(
      BenchmarkOptions o, Point p, List<Double> trials, boolean correct) {
    double micros = TrialPolicy.figure(trials);
    long bytes = Workload.bytes(o.op(), o.worldSize(), p.count());
    double algbw = bytes / (micros * 1e-6) / 1e9;
    return new BenchmarkResult(
        o.op(),
        p.algorithm(),
        o.worldSize(),
        bytes,
        micros,
        algbw,
        algbw * o.op().busBandwidthFactor(o.worldSize()),
        correct,
        TrialPolicy.describe(o.trials(), o.iterations()),
        trials);
  }

  private static double median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    int m = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2.0;
  }

  /** An nccl-tests-style text table. */
  public static String formatTable(List<BenchmarkResult> results) {
    StringBuilder sb = new StringBuilder();
    if (!results.isEmpty()) {
      BenchmarkResult first = results.getFirst();
      sb.append(
          String.format(
              Locale.ROOT,
              "# %s, %d ranks, time: %s (slowest rank each)%n",
              first.op(),
              first.worldSize(),
              first.statistic()));
      if (results.stream().anyMatch(r -> r.trialMicros().size() > 1)) {
        sb.append(
            String.format(
                Locale.ROOT,
                "# trials: more while a point's two smallest trial medians differ by more than"
                    + " %1$.0f%%; time: the smallest median another trial confirms (within"
                    + " %1$.0f%%); * = none confirmed%n",
                TrialPolicy.AGREEMENT * 100));
      }
    }
    sb.append(
        String.format(
            Locale.ROOT,
            "%20s %12s %12s %12s %12s %6s %7s%n",
            "algorithm",
            "size(B)",
            "time(us)",
            "algbw(GB/s)",
            "busbw(GB/s)",
            "check",
            "trials"));
    for (BenchmarkResult r : results) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%20s %12d %12.2f %12.3f %12.3f %6s %7s%n",
              r.label(),
              r.bytes(),
              r.timeMicros(),
              r.algBandwidthGBps(),
              r.busBandwidthGBps(),
              r.correct() ? "ok" : "WRONG",
              trials(r)));
    }
    return sb.toString();
  }

  /** A point's trial count, starred where its two smallest trials never agreed. */
  private static String trials(BenchmarkResult r) {
    int n = r.trialMicros().size();
    return n <= 1
        ? String.valueOf(Math.max(n, 1))
        : n + (TrialPolicy.agreed(r.trialMicros()) ? "" : "*");
  }

  /** The results as a JSON array of objects, one per point. */
  public static String toJson(List<BenchmarkResult> results) {
    try {
      return new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(results);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialise benchmark results", e);
    }
  }

  /** Reads results written by {@link #toJson}. */
  public static List<BenchmarkResult> fromJson(String json) {
    try {
      return List.of(new ObjectMapper().readValue(json, BenchmarkResult[].class));
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not benchmark results JSON", e);
    }
  }

  /**
   * Runs the benchmark from the command line. Arguments are {@code key=value}: {@code world}
   * (default 4), {@code op} (ALL_REDUCE), {@code algorithms} (comma-separated), {@code min} and
   * {@code max} bytes (suffixes K, M), {@code warmup}, {@code iters}, {@code trials}, {@code
   * chunk}, {@code out} (a directory for the JSON and PNG; without it only the table is printed),
   * {@code plot} (false where the runtime has no AWT; {@link BusBandwidthPlot#main} draws the PNG
   * from the JSON later).
   */
  public static void main(String[] args) throws IOException {
    int world = 4;
    CollectiveOp op = CollectiveOp.ALL_REDUCE;
    String out = null;
    boolean plot = true;
    List<String> rest = new ArrayList<>();
    for (String arg : args) {
      String[] kv = arg.split("=", 2);
      if (kv.length != 2) {
        throw new IllegalArgumentException("expected key=value, got " + arg);
      }
      switch (kv[0]) {
        case "world" -> world = Integer.parseInt(kv[1]);
        case "op" -> op = CollectiveOp.valueOf(kv[1].toUpperCase(Locale.ROOT));
        case "out" -> out = kv[1];
        case "plot" -> plot = Boolean.parseBoolean(kv[1]);
        default -> rest.add(arg);
      }
    }
    BenchmarkOptions o = BenchmarkOptions.defaults(world, op);
    for (String arg : rest) {
      String[] kv = arg.split("=", 2);
      o =
          switch (kv[0]) {
            case "algorithms" ->
                o.withAlgorithms(
                    Arrays.stream(kv[1].split(","))
                        .map(a -> AllReduceAlgorithm.valueOf(a.toUpperCase(Locale.ROOT)))
                        .toList());
            case "min" -> o.withBytes(parseBytes(kv[1]), o.maxBytes());
            case "max" -> o.withBytes(o.minBytes(), parseBytes(kv[1]));
            case "warmup" -> o.withIterations(Integer.parseInt(kv[1]), o.iterations());
            case "iters" -> o.withIterations(o.warmupIterations(), Integer.parseInt(kv[1]));
            case "trials" -> o.withTrials(Integer.parseInt(kv[1]));
            case "chunk" ->
                new BenchmarkOptions(
                    o.worldSize(),
                    o.op(),
                    o.algorithms(),
                    o.minBytes(),
                    o.maxBytes(),
                    o.warmupIterations(),
                    o.iterations(),
                    Integer.parseInt(kv[1]),
                    o.trials());
            default -> throw new IllegalArgumentException("unknown option " + kv[0]);
          };
    }
    List<BenchmarkResult> results = run(o);
    System.out.print(formatTable(results));
    if (out != null) {
      Path dir = Path.of(out);
      Files.createDirectories(dir);
      String stem = "collectives-" + op.name().toLowerCase(Locale.ROOT) + "-n" + world;
      Files.writeString(dir.resolve(stem + ".json"), toJson(results));
      if (plot) {
        BusBandwidthPlot.write(results, dir.resolve(stem + ".png"));
      }
    }
  }

  /** Parses a byte count with an optional K, M or G suffix (binary). */
  static long parseBytes(String s) {
    String t = s.trim().toUpperCase(Locale.ROOT);
    int shift =
        switch (t.isEmpty() ? ' ' : t.charAt(t.length() - 1)) {
          case 'K' -> 10;
          case 'M' -> 20;
          case 'G' -> 30;
          default -> 0;
        };
    String digits = shift == 0 ? t : t.substring(0, t.length() - 1);
    return Long.parseLong(digits) << shift;
  }
}
