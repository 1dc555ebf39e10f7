package dev.ringmaster.cuda.testing;

import dev.ringmaster.cuda.topology.GpuTopology;
import dev.ringmaster.cuda.topology.Link;
import java.util.ArrayList;
import java.util.List;

/** Topologies made up for tests that need no GPU. */
public final class FakeTopology {
  private FakeTopology() {}

  /**
   * {@code n} GPUs, all pairs linked by {@code link} (with {@code nv} NVLinks), peer access
   * everywhere.
   */
  public static GpuTopology fake(int n, Link link, int nv, String driver) {
    List<String> names = new ArrayList<>();
    List<String> bus = new ArrayList<>();
    Link[][] l = new Link[n][n];
    int[][] c = new int[n][n];
    boolean[][] p = new boolean[n][n];
    for (int i = 0; i < n; i++) {
      names.add("NVIDIA H200");
      bus.add(String.format("0000:%02x:00.0", 0x19 + i));
      for (int j = 0; j < n; j++) {
        l[i][j] = i == j ? Link.SELF : link;
        c[i][j] = i == j ? 0 : nv;
        p[i][j] = i != j;
      }
    }
    return new GpuTopology(names, bus, driver, l, c, p);
  }
}
