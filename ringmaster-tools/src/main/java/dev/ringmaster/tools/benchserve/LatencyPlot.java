package dev.ringmaster.tools.benchserve;

import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * A PNG of a run's latency distributions: histograms (top row) and cumulative distributions (bottom
 * row) of TTFT, inter-token latency and end-to-end latency, in milliseconds.
 */
public final class LatencyPlot {
  private static final int PANEL_W = 560;
  private static final int PANEL_H = 380;
  private static final int BINS = 20;

  private LatencyPlot() {}

  /** Writes the plot of {@code r} to {@code file}. */
  public static void write(Path file, BenchServeResult r) throws IOException {
    System.setProperty("java.awt.headless", "true");
    List<double[]> samples = new ArrayList<>();
    List<String> names = List.of("TTFT", "ITL", "E2E latency");
    double[] t =
        r.outputs().stream()
            .filter(RequestOutput::success)
            .mapToDouble(o -> o.ttftS() * 1000)
            .toArray();
    double[] i =
        r.outputs().stream()
            .filter(RequestOutput::success)
            .flatMapToDouble(o -> Arrays.stream(o.itlS()))
            .map(v -> v * 1000)
            .toArray();
    double[] e =
        r.outputs().stream()
            .filter(RequestOutput::success)
            .mapToDouble(o -> o.latencyS() * 1000)
            .toArray();
    samples.add(t);
    samples.add(i);
    samples.add(e);
    List<Chart<?, ?>> top = new ArrayList<>();
    List<Chart<?, ?>> bottom = new ArrayList<>();
    String title =
        r.config().target().backendName()
            + ", rate "
            + ResultReport.rateText(r.config().load().requestRate())
            + ", max concurrency "
            + (r.config().load().maxConcurrency() == null
                ? "not set"
                : r.config().load().maxConcurrency());
    for (int k = 0; k < names.size(); k++) {
      top.add(histogram(names.get(k) + " (" + title + ")", samples.get(k)));
      bottom.add(cdf(names.get(k) + " CDF", samples.get(k)));
    }
    BufferedImage img = new BufferedImage(PANEL_W * 3, PANEL_H * 2, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      for (int k = 0; k < 3; k++) {
        paint(g, top.get(k), k * PANEL_W, 0);
        paint(g, bottom.get(k), k * PANEL_W, PANEL_H);
      }
    } finally {
      g.dispose();
    }
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    ImageIO.write(img, "png", file.toFile());
  }

  private static void paint(Graphics2D g, Chart<?, ?> chart, int x, int y) {
    Graphics2D sub = (Graphics2D) g.create(x, y, PANEL_W, PANEL_H);
    try {
      chart.paint(sub, PANEL_W, PANEL_H);
    } finally {
      sub.dispose();
    }
  }

  private static CategoryChart histogram(String title, double[] v) {
    CategoryChart c =
        new CategoryChartBuilder()
            .width(PANEL_W)
            .height(PANEL_H)
            .title(title)
            .xAxisTitle("ms")
            .yAxisTitle("count")
            .build();
    c.getStyler().setLegendVisible(false);
    c.getStyler().setXAxisLabelRotation(45);
    c.getStyler().setXAxisDecimalPattern("#0.##");
    c.getStyler().setAvailableSpaceFill(0.95);
    double lo = v.length == 0 ? 0 : Arrays.stream(v).min().orElse(0);
    double hi = v.length == 0 ? 1 : Arrays.stream(v).max().orElse(1);
    double width = hi > lo ? (hi - lo) / BINS : 1;
    List<Double> centers = new ArrayList<>();
    List<Integer> counts = new ArrayList<>();
    int[] bins = new int[BINS];
    for (double x : v) {
      bins[Math.min((int) ((x - lo) / width), BINS - 1)]++;
    }
    for (int b = 0; b < BINS; b++) {
      centers.add(lo + (b + 0.5) * width);
      counts.add(bins[b]);
    }
    c.addSeries("count", centers, counts);
    return c;
  }

  private static XYChart cdf(String title, double[] v) {
    XYChart c =
        new XYChartBuilder()
            .width(PANEL_W)
            .height(PANEL_H)
            .title(title)
            .xAxisTitle("ms")
            .yAxisTitle("fraction <= x")
            .build();
    c.getStyler().setLegendPosition(Styler.LegendPosition.InsideSE);
    c.getStyler().setYAxisMin(0.0);
    c.getStyler().setYAxisMax(1.0);
    c.getStyler().setYAxisDecimalPattern("0.0");
    c.getStyler().setXAxisDecimalPattern("#,##0.#");
    double[] sorted = v.clone();
    Arrays.sort(sorted);
    double[] ys = new double[sorted.length];
    for (int k = 0; k < sorted.length; k++) {
      ys[k] = (k + 1.0) / sorted.length;
    }
    if (sorted.length == 0) {
      sorted = new double[] {0};
      ys = new double[] {0};
    }
    c.addSeries("n = " + v.length, sorted, ys).setMarker(SeriesMarkers.NONE);
    return c;
  }
}
