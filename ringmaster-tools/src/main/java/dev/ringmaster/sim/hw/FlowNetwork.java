package dev.ringmaster.sim.hw;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Concurrent flows over shared links: every link's capacity is divided max-min fairly among the
 * flows crossing it (progressive filling), each flow also limited by its own cap, and rates are
 * recomputed whenever a flow finishes, so that the flows left behind speed up.
 *
 * <p>A flow may use a resource with a weight other than 1: a read window of {@code W} bytes in
 * flight is a resource of capacity {@code W} that a flow of round trip {@code rtt} seconds uses
 * with weight {@code rtt} (Little's law: bytes in flight = rate x round trip), so that the flows of
 * one reader share its outstanding requests and a far peer costs more of them per byte.
 */
public final class FlowNetwork {
  private final Map<String, Double> capacity = new HashMap<>();
  private final List<Flow> flows = new ArrayList<>();

  private record Flow(double bytes, double cap, Map<String, Double> use) {}

  /** Declares a link of {@code bytesPerSecond} (one direction). */
  public void link(String name, double bytesPerSecond) {
    if (!(bytesPerSecond > 0)) {
      throw new IllegalArgumentException("link " + name + " needs a positive capacity");
    }
    capacity.put(name, bytesPerSecond);
  }

  /** Adds a flow of {@code bytes} over {@code links}, at most {@code cap} bytes/s on its own. */
  public void flow(double bytes, double cap, List<String> links) {
    Map<String, Double> use = new HashMap<>();
    for (String l : links) {
      use.merge(l, 1.0, Double::sum);
    }
    flow(bytes, cap, use);
  }

  /**
   * Adds a flow of {@code bytes} that uses each resource of {@code use} at its weight times the
   * flow's rate, at most {@code cap} bytes/s on its own.
   */
  public void flow(double bytes, double cap, Map<String, Double> use) {
    for (Map.Entry<String, Double> e : use.entrySet()) {
      if (!capacity.containsKey(e.getKey())) {
        throw new IllegalArgumentException("flow over undeclared link " + e.getKey());
      }
      if (!(e.getValue() > 0)) {
        throw new IllegalArgumentException("flow over " + e.getKey() + " needs a positive weight");
      }
    }
    flows.add(new Flow(bytes, cap, Map.copyOf(use)));
  }

  /** Seconds until the last flow has delivered its bytes. */
  public double makespanSeconds() {
    int n = flows.size();
    double[] left = new double[n];
    boolean[] done = new boolean[n];
    int active = 0;
    for (int i = 0; i < n; i++) {
      left[i] = flows.get(i).bytes();
      done[i] = left[i] <= 0;
      active += done[i] ? 0 : 1;
    }
    double t = 0;
    while (active > 0) {
      double[] rate = maxMinRates(done);
      double step = Double.POSITIVE_INFINITY;
      for (int i = 0; i < n; i++) {
        if (!done[i]) {
          step = Math.min(step, left[i] / rate[i]);
        }
      }
      t += step;
      for (int i = 0; i < n; i++) {
        if (!done[i]) {
          left[i] -= rate[i] * step;
          if (left[i] <= 1e-9 * flows.get(i).bytes()) {
            done[i] = true;
            active--;
          }
        }
      }
    }
    return t;
  }

  /** Max-min fair rates of the flows not done: fill all equally, freeze at each bottleneck. */
  private double[] maxMinRates(boolean[] done) {
    int n = flows.size();
    double[] rate = new double[n];
    boolean[] frozen = done.clone();
    Map<String, Double> left = new HashMap<>(capacity);
    while (true) {
      Map<String, Double> users = new HashMap<>();
      int open = 0;
      for (int i = 0; i < n; i++) {
        if (!frozen[i]) {
          open++;
          flows.get(i).use().forEach((l, w) -> users.merge(l, w, Double::sum));
        }
      }
      if (open == 0) {
        return rate;
      }
      double inc = Double.POSITIVE_INFINITY;
      for (Map.Entry<String, Double> e : users.entrySet()) {
        inc = Math.min(inc, left.get(e.getKey()) / e.getValue());
      }
      for (int i = 0; i < n; i++) {
        if (!frozen[i]) {
          inc = Math.min(inc, flows.get(i).cap() - rate[i]);
        }
      }
      for (int i = 0; i < n; i++) {
        if (!frozen[i]) {
          rate[i] += inc;
          for (Map.Entry<String, Double> e : flows.get(i).use().entrySet()) {
            left.merge(e.getKey(), -inc * e.getValue(), Double::sum);
          }
        }
      }
      for (int i = 0; i < n; i++) {
        if (frozen[i]) {
          continue;
        }
        boolean saturated = rate[i] >= flows.get(i).cap() * (1 - 1e-12);
        for (String l : flows.get(i).use().keySet()) {
          saturated |= left.get(l) <= capacity.get(l) * 1e-12;
        }
        frozen[i] = saturated;
      }
    }
  }
}
