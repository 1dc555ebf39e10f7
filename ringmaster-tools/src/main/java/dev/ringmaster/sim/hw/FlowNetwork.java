package dev.ringmaster.sim.hw;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Concurrent flows over shared links: every link's capacity is divided max-min fairly among the
 * flows crossing it (progressive filling), each flow also limited by its own cap, and rates are
 * recomputed whenever a flow finishes, so that the flows left behind speed up.
 */
public final class FlowNetwork {
  private final Map<String, Double> capacity = new HashMap<>();
  private final List<Flow> flows = new ArrayList<>();

  private record Flow(double bytes, double cap, List<String> links) {}

  /** Declares a link of {@code bytesPerSecond} (one direction). */
  public void link(String name, double bytesPerSecond) {
    if (!(bytesPerSecond > 0)) {
      throw new IllegalArgumentException("link " + name + " needs a positive capacity");
    }
    capacity.put(name, bytesPerSecond);
  }

  /** Adds a flow of {@code bytes} over {@code links}, at most {@code cap} bytes/s on its own. */
  public void flow(double bytes, double cap, List<String> links) {
    for (String l : links) {
      if (!capacity.containsKey(l)) {
        throw new IllegalArgumentException("flow over undeclared link " + l);
      }
    }
    flows.add(new Flow(bytes, cap, List.copyOf(links)));
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
      Map<String, Integer> users = new HashMap<>();
      int open = 0;
      for (int i = 0; i < n; i++) {
        if (!frozen[i]) {
          open++;
          for (String l : flows.get(i).links()) {
            users.merge(l, 1, Integer::sum);
          }
        }
      }
      if (open == 0) {
        return rate;
      }
      double inc = Double.POSITIVE_INFINITY;
      for (Map.Entry<String, Integer> e : users.entrySet()) {
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
          for (String l : flows.get(i).links()) {
            left.merge(l, -inc, Double::sum);
          }
        }
      }
      for (int i = 0; i < n; i++) {
        if (frozen[i]) {
          continue;
        }
        boolean saturated = rate[i] >= flows.get(i).cap() * (1 - 1e-12);
        for (String l : flows.get(i).links()) {
          saturated |= left.get(l) <= capacity.get(l) * 1e-12;
        }
        frozen[i] = saturated;
      }
    }
  }
}
