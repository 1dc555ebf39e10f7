package dev.ringmaster.tools.tune;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The engine flags of one trial (the fixed flags, then the trial's, so the trial's win) read back
 * as values, for the checks that judge a point before it runs. A flag followed by another flag or
 * by nothing is a switch ({@code true}); {@code --kernel-option KEY=V} goes to {@link #kernel}.
 */
final class TrialFlags {
  private final Map<String, String> flags = new HashMap<>();
  private final Map<String, String> kernel = new HashMap<>();

  private TrialFlags(List<String> args) {
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (!a.startsWith("--")) {
        continue;
      }
      int eq = a.indexOf('=');
      String name = eq > 0 ? a.substring(0, eq) : a;
      String value;
      if (eq > 0) {
        value = a.substring(eq + 1);
      } else if (i + 1 < args.size() && !args.get(i + 1).startsWith("--")) {
        value = args.get(++i);
      } else {
        value = "true";
      }
      if (name.equals("--kernel-option")) {
        int k = value.indexOf('=');
        if (k > 0) {
          kernel.put(value.substring(0, k), value.substring(k + 1));
        }
      } else {
        flags.put(name, value);
      }
    }
  }

  /** The flags {@code trial} runs with under {@code config}. */
  static TrialFlags of(TuneConfig config, Trial trial) {
    List<String> all = new ArrayList<>(config.fixedArgs());
    all.addAll(trial.args());
    return new TrialFlags(all);
  }

  /** The flags of an argument list. */
  static TrialFlags parse(List<String> args) {
    return new TrialFlags(args);
  }

  /** The value of {@code name} (or of its alias), else {@code def}. */
  String get(String name, String alias, String def) {
    String v = flags.get(name);
    if (v == null && alias != null) {
      v = flags.get(alias);
    }
    return v == null ? def : v;
  }

  /** The value of {@code name}, else {@code def}. */
  String get(String name, String def) {
    return get(name, null, def);
  }

  /**
   * An integer flag, else {@code def}.
   *
   * @throws IllegalArgumentException naming the flag when the value is not an integer
   */
  int intValue(String name, String alias, int def) {
    String v = get(name, alias, null);
    if (v == null) {
      return def;
    }
    try {
      return Integer.parseInt(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer, got " + v);
    }
  }

  /** Whether a switch is on. */
  boolean on(String name) {
    return "true".equals(flags.get(name));
  }

  /** A kernel option's value, else {@code def}. */
  String kernel(String key, String def) {
    return kernel.getOrDefault(key, def);
  }
}
