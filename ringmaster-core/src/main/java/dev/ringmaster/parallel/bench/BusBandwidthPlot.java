package dev.ringmaster.parallel.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/** A PNG of bus bandwidth against message size, one curve per algorithm. */
public final class BusBandwidthPlot {
  private BusBandwidthPlot() {}

  /** Draws {@code results.json} as {@code results.png} beside it, for each file named. */
  public static void main(String[] args) throws IOException {
    for (String arg : args) {
      Path json = Path.of(arg);
      String name = json.getFileName().toString().replaceFirst("\\.json$", "") + ".png";
      write(CollectiveBenchmark.fromJson(Files.readString(json)), json.resolveSibling(name));
    }
  }

  /** Writes the plot of {@code results} (one operation and world size) to {@code png}. */
  public static void write(List<BenchmarkResult> results, Path png) throws IOException {
    if (results.isEmpty()) {
      throw new IllegalArgumentException("no results to plot");
    }
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true"); // servers have no display
    }
    BenchmarkResult first = results.getFirst();
    XYChart chart =
        new XYChartBuilder()
            .width(900)
            .height(600)
            .title(first.op() + " bus bandwidth, " + first.worldSize() + " ranks")
            .xAxisTitle("message size (bytes)")
            .yAxisTitle("busbw (GB/s)")
            .build();
    chart.getStyler().setXAxisLogarithmic(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setMarkerSize(5);
    Map<String, List<BenchmarkResult>> byLabel = new LinkedHashMap<>();
    for (BenchmarkResult r : results) {
      byLabel.computeIfAbsent(r.label(), k -> new ArrayList<>()).add(r);
    }
    for (Map.Entry<String, List<BenchmarkResult>> e : byLabel.entrySet()) {
      double[] x = e.getValue().stream().mapToDouble(BenchmarkResult::bytes).toArray();
      double[] y = e.getValue().stream().mapToDouble(BenchmarkResult::busBandwidthGBps).toArray();
      chart.addSeries(e.getKey(), x, y);
    }
    // Paint into an image ourselves: XChart 4 deprecates BitmapEncoder's stream variant.
    java.awt.image.BufferedImage img =
        new java.awt.image.BufferedImage(
            chart.getWidth(), chart.getHeight(), java.awt.image.BufferedImage.TYPE_INT_RGB);
    java.awt.Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(
          java.awt.RenderingHints.KEY_ANTIALIASING, java.awt.RenderingHints.VALUE_ANTIALIAS_ON);
      chart.paint(g, chart.getWidth(), chart.getHeight());
    } finally {
      g.dispose();
    }
    try (OutputStream os = Files.newOutputStream(png)) {
      javax.imageio.ImageIO.write(img, "png", os);
    }
  }
}
