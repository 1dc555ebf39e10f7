package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.hw.AlphaBeta;
import dev.ringmaster.sim.hw.CollectiveModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;

/**
 * Fits NCCL's allreduce constants, {@code t = base + hop*steps + busBytes/bw} per
 * algorithm/protocol. Each pair's fit minimises its largest relative error (minimax: the
 * calibration is judged point by point, over sizes that span five orders of magnitude), with every
 * constant non-negative.
 *
 * <p>Samples that name their protocol fit that pair. Samples of NCCL choosing by itself ({@link
 * BenchCollectives#AUTO}) say nothing of which pair ran, and the profile predicts NCCL as the
 * fastest pair (its tuner), so they are fitted as the lower envelope of the pairs: each sample goes
 * to the pair predicted fastest, the pairs are refitted, and the assignment repeats until it holds
 * (k-lines), keeping the assignment whose envelope has the smallest largest error. That search
 * settles where it starts, so it starts twice and keeps the better end: from the base profile's
 * fastest pair at every point, and from the best split of each world size's sizes into up to three
 * contiguous regimes, small to large, named LL, LL128 and Simple (the order in which NCCL's
 * protocols take over as messages grow), each a line of its own. A pair no sample lands on keeps
 * the base profile's constants, unless it would be predicted faster than the fitted pairs at a
 * measured point: then it is dropped from the profile, since NCCL's tuner would have used it there
 * and NCCL did not run that fast.
 */
final class NcclFit {
  /** NCCL protocols in the order they take over as messages grow. */
  private static final List<String> PROTOCOLS = List.of("LL", "LL128", "Simple");

  /** A bandwidth the samples cannot bound (no size term): effectively infinite, kept finite. */
  static final double UNBOUNDED_BANDWIDTH = 1e15;

  private static final int MAX_ITERATIONS = 30;

  /** Reweighting steps of the minimax fits (a few constants over tens of sizes settle well). */
  static final int MINIMAX_ITERATIONS = 200;

  private NcclFit() {}

  /**
   * Fitted pairs and one line per fitted or dropped pair.
   *
   * @param nccl the pairs, fitted or kept
   * @param lines description of each fitted or dropped pair
   */
  record Result(Map<String, AlphaBeta> nccl, List<String> lines) {}

  /** Fits {@code base}'s pairs to the allreduce samples among {@code samples}. */
  static Result fit(Map<String, AlphaBeta> base, List<CollectiveSample> samples) {
    Map<String, List<CollectiveSample>> explicit = new LinkedHashMap<>();
    for (String key : base.keySet()) {
      String algo = algorithm(key);
      String proto = protocol(key);
      explicit.put(
          key,
          samples.stream()
              .filter(
                  c ->
                      c.op().equals("allreduce")
                          && (c.algorithm().equals(algo)
                              || (c.algorithm().equals("nccl") && algo.equals("ring")))
                          && proto.equalsIgnoreCase(c.protocol()))
              .toList());
    }
    List<CollectiveSample> auto =
        samples.stream()
            .filter(
                c ->
                    c.op().equals("allreduce")
                        && c.algorithm().equals("nccl")
                        && BenchCollectives.AUTO.equalsIgnoreCase(c.protocol()))
            .toList();
    List<String[]> starts = new ArrayList<>();
    starts.add(fastestLabels(base, auto));
    if (!auto.isEmpty()) {
      String[] split = splitLabels(base, auto);
      if (split != null && !Arrays.equals(split, starts.getFirst())) {
        starts.add(split);
      }
    }
    Outcome best = null;
    for (String[] start : starts) {
      Outcome o = kLines(base, explicit, auto, start);
      if (best == null || o.score < best.score - 1e-9) {
        best = o;
      }
    }
    return best.finish(base, explicit, auto);
  }

  /** Where a k-lines search ended: the constants, the assignment they were fitted to, the score. */
  private record Outcome(Map<String, AlphaBeta> nccl, String[] labels, double score) {

    /**
     * The profile's pairs. A pair with the base constants that would be predicted faster than the
     * fitted pairs somewhere NCCL was measured is dropped (NCCL's tuner would have used it there,
     * and it did not run that fast); a fitted pair that is predicted fastest at no auto sample and
     * has no sample of its own protocol is of no use and goes back to the base constants (or is
     * dropped by the same rule). Each fitted pair is described on the samples it predicts: its own
     * and the auto samples where it is fastest.
     */
    Result finish(
        Map<String, AlphaBeta> base,
        Map<String, List<CollectiveSample>> explicit,
        List<CollectiveSample> auto) {
      List<String> dropped = new ArrayList<>();
      Map<String, AlphaBeta> out = new LinkedHashMap<>(nccl);
      List<String> fittedKeys = new ArrayList<>();
      for (String key : base.keySet()) {
        if (fitted(key, samplesOf(key, explicit, auto, labels))) {
          fittedKeys.add(key);
        }
      }
      for (String key : base.keySet()) {
        if (!fittedKeys.contains(key) && undercuts(out, fittedKeys, key, auto)) {
          out.remove(key);
          dropped.add(key);
        }
      }
      String[] roles = fastestLabels(out, auto);
      for (String key : List.copyOf(fittedKeys)) {
        if (explicit.get(key).isEmpty() && !Arrays.asList(roles).contains(key)) {
          fittedKeys.remove(key);
          out.put(key, base.get(key));
          if (undercuts(out, fittedKeys, key, auto)) {
            out.remove(key);
            dropped.add(key);
          }
        }
      }
      roles = fastestLabels(out, auto);
      List<String> lines = new ArrayList<>();
      for (String key : fittedKeys) {
        AlphaBeta ab = out.get(key);
        List<CollectiveSample> s = samplesOf(key, explicit, auto, roles);
        lines.add(describe("nccl " + key, ab, s, c -> time(key, ab, c)));
      }
      for (String key : dropped) {
        lines.add(
            "nccl "
                + key
                + " dropped: no sample fits it, and with the base profile's constants it would be"
                + " predicted faster than the fitted pairs where NCCL was measured");
      }
      return new Result(out, lines);
    }

    /** Whether {@code key} is predicted faster than every fitted pair at some auto sample. */
    private static boolean undercuts(
        Map<String, AlphaBeta> m,
        List<String> fittedKeys,
        String key,
        List<CollectiveSample> auto) {
      if (fittedKeys.isEmpty()) {
        return false;
      }
      for (CollectiveSample c : auto) {
        double own = time(key, m.get(key), c);
        double fitted = Double.POSITIVE_INFINITY;
        for (String k : fittedKeys) {
          fitted = Math.min(fitted, time(k, m.get(k), c));
        }
        if (own < fitted) {
          return true;
        }
      }
      return false;
    }
  }

  private static Outcome kLines(
      Map<String, AlphaBeta> base,
      Map<String, List<CollectiveSample>> explicit,
      List<CollectiveSample> auto,
      String[] start) {
    String[] labels = start;
    Outcome best = null;
    for (int iter = 0; iter < MAX_ITERATIONS; iter++) {
      // every pair from the base profile, then the ones with samples fitted to them
      Map<String, AlphaBeta> next = new LinkedHashMap<>(base);
      for (String key : base.keySet()) {
        List<CollectiveSample> s = samplesOf(key, explicit, auto, labels);
        if (fitted(key, s)) {
          try {
            next.put(key, fitPair(key, s, base.get(key)));
          } catch (IllegalArgumentException collinear) {
            // e.g. every sample the same size: the pair keeps the base constants
          }
        }
      }
      double score = score(next, explicit, auto, labels, base);
      if (best == null || score < best.score - 1e-12) {
        best = new Outcome(next, labels.clone(), score);
      }
      String[] again = fastestLabels(next, auto);
      if (Arrays.equals(again, labels)) {
        break;
      }
      labels = again;
    }
    return best;
  }

  /** Largest relative error over all samples, with never-fitted undercutting pairs dropped. */
  private static double score(
      Map<String, AlphaBeta> m,
      Map<String, List<CollectiveSample>> explicit,
      List<CollectiveSample> auto,
      String[] labels,
      Map<String, AlphaBeta> base) {
    Map<String, AlphaBeta> kept = new Outcome(m, labels, 0).finish(base, explicit, auto).nccl();
    double max = 0;
    for (CollectiveSample c : auto) {
      max = Math.max(max, Math.abs(fastestTime(kept, c) / c.timeUs() - 1));
    }
    for (Map.Entry<String, List<CollectiveSample>> e : explicit.entrySet()) {
      AlphaBeta ab = kept.get(e.getKey());
      if (ab == null) {
        continue;
      }
      for (CollectiveSample c : e.getValue()) {
        max = Math.max(max, Math.abs(time(e.getKey(), ab, c) / c.timeUs() - 1));
      }
    }
    return max;
  }

  private static List<CollectiveSample> samplesOf(
      String key,
      Map<String, List<CollectiveSample>> explicit,
      List<CollectiveSample> auto,
      String[] labels) {
    List<CollectiveSample> s = new ArrayList<>(explicit.getOrDefault(key, List.of()));
    for (int i = 0; i < auto.size(); i++) {
      if (key.equals(labels[i])) {
        s.add(auto.get(i));
      }
    }
    return s;
  }

  /** Whether {@code s} is enough to fit a pair (3 samples over several rank counts, else 2). */
  private static boolean fitted(String key, List<CollectiveSample> s) {
    return s.size() >= (severalRanks(s) ? 3 : 2);
  }

  private static boolean severalRanks(List<CollectiveSample> s) {
    return s.stream().mapToInt(CollectiveSample::ranks).distinct().count() > 1;
  }

  /** The pair {@code m} predicts fastest for each sample (NCCL's tuner). */
  private static String[] fastestLabels(Map<String, AlphaBeta> m, List<CollectiveSample> auto) {
    String[] out = new String[auto.size()];
    for (int i = 0; i < out.length; i++) {
      CollectiveSample c = auto.get(i);
      double bestT = Double.POSITIVE_INFINITY;
      for (Map.Entry<String, AlphaBeta> e : m.entrySet()) {
        double t = time(e.getKey(), e.getValue(), c);
        if (t < bestT) {
          bestT = t;
          out[i] = e.getKey();
        }
      }
    }
    return out;
  }

  private static double fastestTime(Map<String, AlphaBeta> m, CollectiveSample c) {
    double best = Double.POSITIVE_INFINITY;
    for (Map.Entry<String, AlphaBeta> e : m.entrySet()) {
      best = Math.min(best, time(e.getKey(), e.getValue(), c));
    }
    return best;
  }

  /**
   * Labels from the best split of each world size's auto samples, by size, into up to three
   * contiguous regimes of at least two samples, each fitted by a line of its own; the split with
   * the smallest largest relative error of the lines' lower envelope wins (fewer regimes on a tie).
   * The regimes are named by protocol in NCCL's order, choosing among the ordered choices the one
   * whose base constants come closest to the samples; each name takes the ring pair where the base
   * profile has one, else the tree pair. Null when the base profile has no pair to name one by.
   */
  private static String[] splitLabels(Map<String, AlphaBeta> base, List<CollectiveSample> auto) {
    List<String> keys = new ArrayList<>();
    for (String proto : PROTOCOLS) {
      String ring = "ring/" + proto;
      String tree = "tree/" + proto;
      if (base.containsKey(ring)) {
        keys.add(ring);
      } else if (base.containsKey(tree)) {
        keys.add(tree);
      }
    }
    if (keys.isEmpty()) {
      return null;
    }
    String[] labels = new String[auto.size()];
    Map<Integer, List<Integer>> byRanks = new TreeMap<>();
    for (int i = 0; i < auto.size(); i++) {
      byRanks.computeIfAbsent(auto.get(i).ranks(), k -> new ArrayList<>()).add(i);
    }
    for (List<Integer> idx : byRanks.values()) {
      List<Integer> sorted = new ArrayList<>(idx);
      sorted.sort(Comparator.comparingDouble(i -> auto.get(i).bytes()));
      List<CollectiveSample> s = sorted.stream().map(auto::get).toList();
      int[] cuts = bestSplit(s, Math.min(keys.size(), 3));
      List<String> names = nameRegimes(base, keys, s, cuts);
      for (int r = 0; r <= cuts.length; r++) {
        int from = r == 0 ? 0 : cuts[r - 1];
        int to = r == cuts.length ? s.size() : cuts[r];
        for (int j = from; j < to; j++) {
          labels[sorted.get(j)] = names.get(r);
        }
      }
    }
    return labels;
  }

  /** Cut points (start index of every regime after the first) of the best split. */
  private static int[] bestSplit(List<CollectiveSample> s, int maxRegimes) {
    int m = s.size();
    int[] best = new int[0];
    double bestErr = envelopeError(s, best);
    for (int k = 2; k <= maxRegimes; k++) {
      double bestK = Double.POSITIVE_INFINITY;
      int[] argK = null;
      for (int[] cuts : cutsOf(m, k)) {
        double err = envelopeError(s, cuts);
        if (err < bestK) {
          bestK = err;
          argK = cuts;
        }
      }
      // another regime has to earn its place: half a point of largest error at least
      if (argK != null && bestK < bestErr - 0.005) {
        best = argK;
        bestErr = bestK;
      }
    }
    return best;
  }

  /** Every way to cut {@code m} sorted samples into {@code k} runs of at least two. */
  private static List<int[]> cutsOf(int m, int k) {
    List<int[]> out = new ArrayList<>();
    addCuts(out, new int[k - 1], 0, 2, m);
    return out;
  }

  private static void addCuts(List<int[]> out, int[] cuts, int pos, int from, int m) {
    if (pos == cuts.length) {
      if (m - (pos == 0 ? 0 : cuts[pos - 1]) >= 2) {
        out.add(cuts.clone());
      }
      return;
    }
    for (int c = from; c <= m - 2; c++) {
      cuts[pos] = c;
      addCuts(out, cuts, pos + 1, c + 2, m);
    }
  }

  /** Largest relative error of the lower envelope of one line per regime. */
  private static double envelopeError(List<CollectiveSample> s, int[] cuts) {
    List<double[]> lines = new ArrayList<>();
    for (int r = 0; r <= cuts.length; r++) {
      int from = r == 0 ? 0 : cuts[r - 1];
      int to = r == cuts.length ? s.size() : cuts[r];
      List<CollectiveSample> seg = s.subList(from, to);
      double[][] x = new double[seg.size()][];
      double[] y = new double[seg.size()];
      for (int i = 0; i < seg.size(); i++) {
        CollectiveSample c = seg.get(i);
        x[i] = new double[] {1 / c.timeUs(), busMb(c) / c.timeUs()};
        y[i] = 1;
      }
      lines.add(LeastSquares.nonNegativeMinimax(x, y, MINIMAX_ITERATIONS));
    }
    double max = 0;
    for (CollectiveSample c : s) {
      double t = Double.POSITIVE_INFINITY;
      for (double[] l : lines) {
        t = Math.min(t, l[0] + l[1] * busMb(c));
      }
      max = Math.max(max, Math.abs(t / c.timeUs() - 1));
    }
    return max;
  }

  /**
   * Protocol keys for the regimes of a split, small to large: NCCL starts with LL and ends with
   * Simple, so two regimes are the first and last protocol the base profile has and three are all
   * of them; a single regime takes the protocol whose base constants have the smallest squared
   * relative error on the samples.
   */
  private static List<String> nameRegimes(
      Map<String, AlphaBeta> base, List<String> keys, List<CollectiveSample> s, int[] cuts) {
    int k = cuts.length + 1;
    if (k == keys.size()) {
      return keys;
    }
    if (k == 2) {
      return List.of(keys.getFirst(), keys.getLast());
    }
    List<String> best = null;
    double bestSq = Double.POSITIVE_INFINITY;
    for (List<String> choice : orderedChoices(keys, k)) {
      double sq = 0;
      for (int r = 0; r < k; r++) {
        int from = r == 0 ? 0 : cuts[r - 1];
        int to = r == cuts.length ? s.size() : cuts[r];
        String key = choice.get(r);
        for (CollectiveSample c : s.subList(from, to)) {
          double e = time(key, base.get(key), c) / c.timeUs() - 1;
          sq += e * e;
        }
      }
      if (sq < bestSq) {
        bestSq = sq;
        best = choice;
      }
    }
    return best;
  }

  private static List<List<String>> orderedChoices(List<String> keys, int k) {
    List<List<String>> out = new ArrayList<>();
    addChoices(out, keys, k, 0, new ArrayList<>());
    return out;
  }

  private static void addChoices(
      List<List<String>> out, List<String> keys, int k, int from, List<String> sofar) {
    if (sofar.size() == k) {
      out.add(List.copyOf(sofar));
      return;
    }
    for (int i = from; i < keys.size(); i++) {
      sofar.add(keys.get(i));
      addChoices(out, keys, k, i + 1, sofar);
      sofar.removeLast();
    }
  }

  /**
   * One pair on relative error, constants non-negative: base, hop and bandwidth over several rank
   * counts; base and bandwidth at one rank count, where hop and base cannot be told apart and the
   * hop keeps the prior's value.
   */
  private static AlphaBeta fitPair(String key, List<CollectiveSample> s, AlphaBeta prior) {
    return fitAlphaBeta(
        s,
        prior,
        c -> CollectiveModel.allreduceSteps(key, c.ranks()),
        c -> c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks());
  }

  /**
   * {@code t = base + hop*steps + busBytes/bw} on relative error, every constant non-negative; with
   * one rank count the hop keeps {@code prior}'s value.
   */
  static AlphaBeta fitAlphaBeta(
      List<CollectiveSample> s,
      AlphaBeta prior,
      ToIntFunction<CollectiveSample> steps,
      ToDoubleFunction<CollectiveSample> busBytes) {
    boolean several = severalRanks(s);
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      CollectiveSample c = s.get(i);
      double w = 1 / c.timeUs();
      double mb = busBytes.applyAsDouble(c) / 1e6; // MB, to keep the system well scaled
      int st = steps.applyAsInt(c);
      x[i] = several ? new double[] {w, st * w, mb * w} : new double[] {w, mb * w};
      y[i] = several ? 1 : (c.timeUs() - prior.hopUs() * st) * w;
    }
    double[] b = LeastSquares.nonNegativeMinimax(x, y, MINIMAX_ITERATIONS);
    double perMb = b[b.length - 1];
    double bw = perMb > 0 ? Math.min(1e12 / perMb, UNBOUNDED_BANDWIDTH) : UNBOUNDED_BANDWIDTH;
    return several ? new AlphaBeta(b[0], b[1], bw) : new AlphaBeta(b[0], prior.hopUs(), bw);
  }

  private static double time(String key, AlphaBeta ab, CollectiveSample c) {
    return ab.timeUs(
        CollectiveModel.allreduceSteps(key, c.ranks()),
        c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks());
  }

  private static double busMb(CollectiveSample c) {
    return c.bytes() * 2.0 * (c.ranks() - 1) / c.ranks() / 1e6;
  }

  private static String algorithm(String key) {
    return key.substring(0, key.indexOf('/'));
  }

  private static String protocol(String key) {
    return key.substring(key.indexOf('/') + 1);
  }

  /** One line: the constants, the samples, their RMS and largest relative error. */
  static String describe(
      String what, AlphaBeta fit, List<CollectiveSample> s, ToDoubleFunction<CollectiveSample> p) {
    double sq = 0;
    double max = 0;
    for (CollectiveSample c : s) {
      double r = (p.applyAsDouble(c) - c.timeUs()) / c.timeUs();
      sq += r * r;
      max = Math.max(max, Math.abs(r));
    }
    long lo = s.stream().mapToLong(c -> (long) c.bytes()).min().orElse(0);
    long hi = s.stream().mapToLong(c -> (long) c.bytes()).max().orElse(0);
    return String.format(
        Locale.ROOT,
        "%s: base %.2f us, hop %.3f us, bus %.2f GB/s (%d samples, %d..%d B, rms error %.1f%%, max"
            + " %.1f%%)",
        what,
        fit.baseUs(),
        fit.hopUs(),
        fit.busBandwidth() / 1e9,
        s.size(),
        lo,
        hi,
        100 * Math.sqrt(sq / s.size()),
        100 * max);
  }
}
