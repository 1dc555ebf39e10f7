package dev.ringmaster.sim.report;

import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/** Writes grouped or stacked bar charts as PNG with XChart (headless). */
public final class BarChartPng {
  private BarChartPng() {}

  /**
   * Writes a bar chart.
   *
   * @param file PNG path
   * @param title chart title
   * @param xLabel x axis title
   * @param yLabel y axis title
   * @param categories x values
   * @param series one bar series per entry, values in category order
   * @param stacked stack the series instead of grouping them
   */
  public static void write(
      Path file,
      String title,
      String xLabel,
      String yLabel,
      List<String> categories,
      Map<String, List<Double>> series,
      boolean stacked)
      throws IOException {
    System.setProperty("java.awt.headless", "true");
    CategoryChart chart =
        new CategoryChartBuilder()
            .width(1100)
            .height(560)
            .title(title)
            .xAxisTitle(xLabel)
            .yAxisTitle(yLabel)
            .build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    chart.getStyler().setStacked(stacked);
    chart.getStyler().setXAxisLabelRotation(categories.size() > 6 ? 30 : 0);
    series.forEach((name, values) -> chart.addSeries(name, categories, values));
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    BufferedImage img =
        new BufferedImage(chart.getWidth(), chart.getHeight(), BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      chart.paint(g, chart.getWidth(), chart.getHeight());
    } finally {
      g.dispose();
    }
    ImageIO.write(img, "png", file.toFile());
  }
}
