package dev.ringmaster.tools.tune;

import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The PNG beside {@code report.md}: the measured trials by rank (the report's rank column) against
 * the objective, each trial's median as a diamond and every repeat as a dot, so the spread the
 * verdict uses is visible. The title counts the failures the chart cannot show.
 */
final class TuneChart {
  private static final int WIDTH = 900;
  private static final int HEIGHT = 500;

  private TuneChart() {}

  /** Writes the chart of {@code report}'s measured trials to {@code file}. */
  static void write(Path file, TuneReport report) throws IOException {
    Verdict v = report.verdict();
    Objective obj = report.config().objective();
    XYChart c =
        new XYChartBuilder()
            .width(WIDTH)
            .height(HEIGHT)
            .title(
                String.format(
                    Locale.ROOT,
                    "tune: %d measured (%d repeat%s each), %d failed",
                    v.ranked().size(),
                    report.config().repeats(),
                    report.config().repeats() == 1 ? "" : "s",
                    report.failures().size()))
            .xAxisTitle("rank (see report.md)")
            .yAxisTitle(obj.unit())
            .build();
    c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    c.getStyler().setLegendLayout(Styler.LegendLayout.Horizontal);
    c.getStyler().setXAxisDecimalPattern("0");
    c.getStyler().setYAxisMin(0.0);
    List<Double> ranks = new ArrayList<>();
    List<Double> medians = new ArrayList<>();
    List<Double> sampleX = new ArrayList<>();
    List<Double> sampleY = new ArrayList<>();
    for (int k = 0; k < v.ranked().size(); k++) {
      TrialResult r = v.ranked().get(k);
      ranks.add(k + 1.0);
      medians.add(r.objective());
      for (double s : r.samples()) {
        sampleX.add(k + 1.0);
        sampleY.add(s);
      }
    }
    // the repeats first, so each median's diamond is drawn over its repeat
    c.addSeries("repeats", sampleX, sampleY)
        .setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter)
        .setMarker(SeriesMarkers.CIRCLE);
    c.addSeries("median", ranks, medians)
        .setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter)
        .setMarker(SeriesMarkers.DIAMOND);
    c.getStyler().setXAxisMin(0.5);
    c.getStyler().setXAxisMax(v.ranked().size() + 0.5);
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    BufferedImage img = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      c.paint(g, WIDTH, HEIGHT);
    } finally {
      g.dispose();
    }
    ImageIO.write(img, "png", file.toFile());
  }
}
