package dev.ringmaster.tools.tune;

import dev.ringmaster.runtime.KernelTuning;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The search space: per dimension a list of values. A dimension is a {@code serve} flag by its name
 * ({@code --chunked-prefill-size=256,512}) or a kernel option by its key ({@code pdl=true,false},
 * sent as {@code --kernel-option pdl=true}). The grid is the cartesian product, first dimension
 * slowest.
 *
 * @param dimensions name to values, in the order given
 */
public record TuneSpace(Map<String, List<String>> dimensions) {

  /** Copies the map. */
  public TuneSpace {
    dimensions = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(dimensions));
  }

  /**
   * Parses {@code NAME=V1,V2,...} specs.
   *
   * @throws IllegalArgumentException naming the spec that is malformed, repeated or unknown
   */
  public static TuneSpace parse(List<String> specs) {
    Map<String, List<String>> d = new LinkedHashMap<>();
    List<String> keys = KernelTuning.keys().stream().map(KernelTuning.Key::name).toList();
    for (String spec : specs) {
      int eq = spec.indexOf('=');
      if (eq <= 0 || eq == spec.length() - 1) {
        throw new IllegalArgumentException(
            "--space "
                + spec
                + ": write NAME=V1,V2 (a flag such as --max-running-requests=8,32"
                + " or a kernel option such as pdl=true,false)");
      }
      String name = spec.substring(0, eq);
      if (!name.startsWith("--") && !keys.contains(name)) {
        throw new IllegalArgumentException(
            "--space "
                + spec
                + ": '"
                + name
                + "' is neither a flag (--name) nor a kernel option "
                + keys);
      }
      if (d.containsKey(name)) {
        throw new IllegalArgumentException("--space names " + name + " twice");
      }
      List<String> values = List.of(spec.substring(eq + 1).split(","));
      if (values.stream().anyMatch(String::isBlank)) {
        throw new IllegalArgumentException("--space " + spec + ": an empty value");
      }
      d.put(name, values);
    }
    return new TuneSpace(d);
  }

  /** Every point, first dimension slowest; a space without dimensions has one empty point. */
  public List<Trial> grid() {
    List<Map<String, String>> points = new ArrayList<>();
    points.add(new LinkedHashMap<>());
    for (var e : dimensions.entrySet()) {
      List<Map<String, String>> next = new ArrayList<>();
      for (Map<String, String> p : points) {
        for (String v : e.getValue()) {
          Map<String, String> q = new LinkedHashMap<>(p);
          q.put(e.getKey(), v);
          next.add(q);
        }
      }
      points = next;
    }
    List<Trial> out = new ArrayList<>();
    for (int i = 0; i < points.size(); i++) {
      out.add(new Trial(i + 1, points.get(i)));
    }
    return out;
  }
}
