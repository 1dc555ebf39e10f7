package dev.ringmaster.sim.hw;

import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * Allreduce on in-process CPU ranks (threads of one JVM exchanging data through shared memory), as
 * {@code bench collectives --device cpu} runs it. Every algorithm is a {@link HostLine} in the
 * message size (a fixed cost, then bytes at a cached and, past a knee, at a memory bandwidth),
 * fitted per algorithm and rank count: the ranks share the host's cores, caches and memory bus, and
 * with more ranks than cores they time-slice, so neither a ring's hop count nor a link bandwidth
 * carries from one rank count to another the way it does between GPUs.
 *
 * @param allreduce line per {@code algorithm/ranks} (ring, oneshot, twoshot, recursive_doubling)
 * @param note how the constants were obtained
 */
public record HostCollectives(Map<String, HostLine> allreduce, String note) {

  /** Copies the map, sorted by key so that saved profiles read the same every time. */
  public HostCollectives {
    allreduce = Collections.unmodifiableMap(new TreeMap<>(allreduce));
  }

  /** Key of an algorithm at a rank count. */
  public static String key(String algorithm, int ranks) {
    return algorithm + "/" + ranks;
  }

  /**
   * Microseconds of an allreduce of {@code bytes} per rank over {@code ranks} ranks with {@code
   * algorithm}, or NaN where the profile has no constants for that pair.
   */
  public double timeUs(String algorithm, double bytes, int ranks) {
    HostLine line = allreduce.get(key(algorithm, ranks));
    return line == null ? Double.NaN : line.timeUs(bytes);
  }

  /** The fastest algorithm with constants at this rank count and size, or null if none. */
  public CollectiveTime fastest(double bytes, int ranks) {
    CollectiveTime best = null;
    for (String k : allreduce.keySet()) {
      if (!k.endsWith("/" + ranks)) {
        continue;
      }
      String algo = k.substring(0, k.indexOf('/'));
      double t = timeUs(algo, bytes, ranks);
      if (best == null || t < best.timeUs()) {
        best = new CollectiveTime(t, "host " + algo);
      }
    }
    return best;
  }
}
