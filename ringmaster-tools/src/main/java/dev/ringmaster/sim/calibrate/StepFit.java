package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.GpuSpec;
import java.util.ArrayList;
import java.util.List;

/**
 * Fits the per-step constants to whole-step samples: {@code wall - gpuBusy = fixed + kernels *
 * perKernel + tokens * layers * (perTokenLayer + contextLen * perContextTokenLayer)}. Graphed steps
 * give the graph-node cost and the step overhead (graph launch kept), eager ones the per-kernel
 * launch cost. Where one-rank samples carry their host share (wall less the profiled graph replay
 * of the same step), that is the step overhead and only the other terms are fitted: kernel counts
 * alone barely tell the two apart. A term is fitted only where the samples tell it apart from the
 * fixed part (kernel counts, batch sizes, or context lengths that differ); otherwise it keeps the
 * base value. The fit minimises relative error, since accuracy is judged in percent at every batch
 * size, with every constant non-negative (the step overhead beyond the graph launch, the per-kernel
 * cost and the per-token latency are times): an unconstrained fit over runs that differ in more
 * than the model sees (several tensor-parallel sizes, say, where the kernel count changes with
 * everything else) can trade a negative overhead against a large per-kernel cost, which explains
 * the samples and predicts nothing.
 */
final class StepFit {
  private StepFit() {}

  /** {@code g} with the step constants fitted to {@code samples}; one line per fit to lines. */
  static GpuSpec fit(GpuSpec g, List<StepSample> samples, List<String> lines) {
    GpuSpec out = g;
    List<StepSample> graphed = samples.stream().filter(StepSample::cudaGraph).toList();
    List<StepSample> eager = samples.stream().filter(s -> !s.cudaGraph()).toList();
    Group gr =
        graphed.isEmpty()
            ? null
            : fitGroup(
                graphed,
                g.graphLaunchUs(),
                g.graphNodeUs(),
                g.decodeTokenLayerUs(),
                g.decodeContextTokenLayerNs(),
                measuredHostUs(graphed, g.graphLaunchUs()));
    if (gr != null) {
      out =
          out.withConstants(
                  g.gemmMemoryEfficiency(),
                  g.moeMemoryEfficiency(),
                  g.attentionMemoryEfficiency(),
                  g.computeEfficiency(),
                  g.kernelLaunchUs(),
                  gr.perKernel,
                  g.graphLaunchUs(),
                  gr.overhead)
              .withDecodeLatency(gr.perToken, gr.perContext);
      lines.add("graphed steps: " + gr.describe("node"));
    }
    Group ea =
        eager.isEmpty()
            ? null
            : fitGroup(
                eager,
                0,
                g.kernelLaunchUs(),
                out.decodeTokenLayerUs(),
                out.decodeContextTokenLayerNs(),
                Double.NaN);
    if (ea != null) {
      boolean keepGraphFit = gr != null;
      out =
          out.withConstants(
                  out.gemmMemoryEfficiency(),
                  out.moeMemoryEfficiency(),
                  out.attentionMemoryEfficiency(),
                  out.computeEfficiency(),
                  ea.perKernel,
                  out.graphNodeUs(),
                  out.graphLaunchUs(),
                  keepGraphFit ? out.stepOverheadUs() : ea.overhead)
              .withDecodeLatency(
                  keepGraphFit ? out.decodeTokenLayerUs() : ea.perToken,
                  keepGraphFit ? out.decodeContextTokenLayerNs() : ea.perContext);
      lines.add("eager steps: " + ea.describe("launch"));
    }
    return out;
  }

  /** Fitted constants of one group and what was fitted. */
  private record Group(
      double overhead,
      boolean overheadMeasured,
      double perKernel,
      double perToken,
      double perContext,
      boolean kernelFitted,
      boolean tokenFitted,
      boolean contextFitted,
      int samples,
      double maxErrorPct) {

    String describe(String perKernelName) {
      return String.format(
          java.util.Locale.ROOT,
          "step overhead %.1f us%s, %s %.3f us%s, token latency %.3f us per token per layer%s,"
              + " context latency %.3f ns per cached token per layer%s (%d samples, max error"
              + " %.1f%%)",
          overhead,
          overheadMeasured ? " measured (wall less the profiled graph replay)" : "",
          perKernelName,
          perKernel,
          kernelFitted ? "" : " kept",
          perToken,
          tokenFitted ? "" : " kept",
          perContext,
          contextFitted ? "" : " kept",
          samples,
          maxErrorPct);
    }
  }

  /**
   * The step overhead beyond the graph launch that the samples measured directly (median over those
   * with a host share, never negative), or NaN where none did.
   */
  private static double measuredHostUs(List<StepSample> s, double launch) {
    double[] h =
        s.stream()
            .mapToDouble(StepSample::hostUs)
            .filter(Double::isFinite)
            .map(v -> Math.max(0, v - launch))
            .sorted()
            .toArray();
    return h.length == 0 ? Double.NaN : h[h.length / 2];
  }

  /**
   * Fits {@code wall - busy - launch = overhead + kernels * perKernel + tokenLayers * perToken +
   * contextTokenLayers * perContext} on relative error, every constant non-negative ({@code
   * launch}: the graph launch, kept; {@code hostUs}: the overhead where measured, then kept too).
   */
  private static Group fitGroup(
      List<StepSample> s,
      double launch,
      double perKernel,
      double perToken,
      double perContext,
      double hostUs) {
    boolean fixedOverhead = Double.isFinite(hostUs);
    boolean kernels = s.stream().mapToInt(StepSample::kernels).distinct().count() > 1;
    boolean layered = s.stream().allMatch(x -> x.layers() > 0);
    boolean tokens =
        layered && s.stream().mapToDouble(StepSample::tokenLayers).distinct().count() > 1;
    boolean context = layered && s.stream().mapToInt(StepSample::contextLen).distinct().count() > 1;
    int intercept = fixedOverhead ? 0 : 1;
    while (intercept + (kernels ? 1 : 0) + (tokens ? 1 : 0) + (context ? 1 : 0) > s.size()) {
      // fewer samples than unknowns: give up the context term first, then the token term, then
      // the per-kernel cost
      if (context) {
        context = false;
      } else if (tokens) {
        tokens = false;
      } else {
        kernels = false;
      }
    }
    double[][] x = new double[s.size()][];
    double[] y = new double[s.size()];
    for (int i = 0; i < s.size(); i++) {
      StepSample v = s.get(i);
      double w = 1 / v.stepTimeUs();
      List<Double> row = new ArrayList<>();
      double rest = v.stepTimeUs() - v.gpuBusyUs() - launch;
      if (fixedOverhead) {
        rest -= hostUs;
      } else {
        row.add(w);
      }
      if (kernels) {
        row.add(v.kernels() * w);
      } else {
        rest -= v.kernels() * perKernel;
      }
      if (tokens) {
        row.add(v.tokenLayers() * w);
      } else {
        rest -= v.tokenLayers() * perToken;
      }
      if (context) {
        row.add(v.contextTokenLayersK() * w);
      } else {
        rest -= v.contextTokenLayersK() * perContext;
      }
      x[i] = row.stream().mapToDouble(Double::doubleValue).toArray();
      y[i] = rest * w;
    }
    double[] fitted = x[0].length == 0 ? new double[0] : LeastSquares.nonNegative(x, y);
    double[] b = new double[fitted.length + 1 - intercept];
    if (fixedOverhead) {
      b[0] = hostUs;
    }
    System.arraycopy(fitted, 0, b, 1 - intercept, fitted.length);
    int at = 1;
    double k = kernels ? b[at++] : perKernel;
    double t = tokens ? b[at++] : perToken;
    double c = context ? b[at] : perContext;
    double max = 0;
    for (StepSample v : s) {
      double pred =
          v.gpuBusyUs()
              + launch
              + b[0]
              + v.kernels() * k
              + v.tokenLayers() * t
              + v.contextTokenLayersK() * c;
      max = Math.max(max, Math.abs(pred / v.stepTimeUs() - 1) * 100);
    }
    return new Group(b[0], fixedOverhead, k, t, c, kernels, tokens, context, s.size(), max);
  }
}
