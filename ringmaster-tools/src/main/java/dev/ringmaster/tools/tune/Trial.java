package dev.ringmaster.tools.tune;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One point of the grid.
 *
 * @param number its place in the grid, from 1
 * @param settings dimension name to value, in the space's order
 */
public record Trial(int number, Map<String, String> settings) {

  /** Copies the map. */
  public Trial {
    settings = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(settings));
  }

  /** The key of this point in the evidence file: {@code name=value} pairs joined by spaces. */
  public String id() {
    return settings.isEmpty() ? "(defaults)" : String.join(" ", flags(settings));
  }

  /** The command-line arguments of these settings. */
  public List<String> args() {
    return flags(settings);
  }

  /**
   * {@code --flag value} for flags ({@code true}: the flag alone, {@code false}: left out, for
   * switches such as {@code --disable-cuda-graph}), {@code --kernel-option key=value} for kernel
   * options.
   */
  static List<String> flags(Map<String, String> settings) {
    List<String> out = new ArrayList<>();
    settings.forEach(
        (k, v) -> {
          if (k.startsWith("--")) {
            if (!v.equals("false")) {
              out.add(k);
            }
            if (!v.equals("true") && !v.equals("false")) {
              out.add(v);
            }
          } else {
            out.add("--kernel-option");
            out.add(k + "=" + v);
          }
        });
    return out;
  }
}
