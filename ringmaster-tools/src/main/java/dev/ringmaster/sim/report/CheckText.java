package dev.ringmaster.sim.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.calibrate.CalibrationCheck.Row;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Renders a {@link CalibrationCheck}: a table of measured, predicted and error, or JSON. */
public final class CheckText {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private CheckText() {}

  /** One line per measurement, then the largest absolute error per kind and overall. */
  public static String text(CalibrationCheck c) {
    StringBuilder b = new StringBuilder();
    b.append(f("predicted against measured on profile %s%n", c.profile()));
    b.append(
        f("%-10s %-44s %14s %14s %9s%n", "kind", "measurement", "measured", "predicted", "error"));
    for (Row r : c.rows()) {
      b.append(
          f(
              "%-10s %-44s %14s %14s %9s%n",
              r.kind(),
              r.what(),
              value(r.measured(), r.unit()),
              r.predictedAtAll() ? value(r.predicted(), r.unit()) : "no model",
              r.predictedAtAll() ? f("%+.1f%%", r.errorPct()) : "-"));
    }
    List<String> parts = new ArrayList<>();
    Map<String, Map<String, Double>> byAlgorithm = maxAbsErrorPctByAlgorithm(c);
    c.maxAbsErrorPctByKind()
        .forEach(
            (k, v) -> {
              Map<String, Double> algos = byAlgorithm.getOrDefault(k, Map.of());
              List<String> inner = new ArrayList<>();
              if (algos.size() > 1) {
                algos.forEach((a, e) -> inner.add(f("%s %.1f%%", a, e)));
              }
              parts.add(
                  f("%s %.1f%%", k, v)
                      + (inner.isEmpty() ? "" : " [" + String.join(", ", inner) + "]"));
            });
    long missing = c.rows().stream().filter(r -> !r.predictedAtAll()).count();
    b.append(
        f(
            "max abs error: %.1f%% (%s)%s%n",
            c.maxAbsErrorPct(),
            String.join(", ", parts),
            missing == 0 ? "" : f("; %d measurements without a model", missing)));
    return b.toString();
  }

  /** Largest absolute error per kind and, for collectives, per algorithm (first-seen order). */
  private static Map<String, Map<String, Double>> maxAbsErrorPctByAlgorithm(CalibrationCheck c) {
    Map<String, Map<String, Double>> out = new LinkedHashMap<>();
    for (Row r : c.rows()) {
      Object algo = r.fields().get("algorithm");
      if (r.predictedAtAll() && algo != null) {
        out.computeIfAbsent(r.kind(), k -> new LinkedHashMap<>())
            .merge(String.valueOf(algo), Math.abs(r.errorPct()), Math::max);
      }
    }
    return out;
  }

  /** JSON: profile, rows (fields, measured, predicted, error_pct) and the largest errors. */
  public static String json(CalibrationCheck c) {
    try {
      return JSON.writeValueAsString(tree(c));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The JSON tree, for embedding in a larger document. */
  public static Map<String, Object> tree(CalibrationCheck c) {
    List<Map<String, Object>> rows = new ArrayList<>();
    for (Row r : c.rows()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("kind", r.kind());
      m.putAll(r.fields());
      m.put("unit", r.unit());
      m.put("measured", r.measured());
      m.put("predicted", r.predictedAtAll() ? r.predicted() : null);
      m.put("error_pct", r.predictedAtAll() ? r.errorPct() : null);
      rows.add(m);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("profile", c.profile());
    out.put("rows", rows);
    out.put("max_abs_error_pct", c.maxAbsErrorPct());
    out.put("max_abs_error_pct_by_kind", c.maxAbsErrorPctByKind());
    return out;
  }

  private static String value(double v, String unit) {
    return f(v >= 100 ? "%.0f %s" : "%.2f %s", v, unit);
  }

  private static String f(String fmt, Object... args) {
    return String.format(Locale.ROOT, fmt, args);
  }
}
