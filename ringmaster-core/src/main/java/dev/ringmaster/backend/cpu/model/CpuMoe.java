package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.backend.cpu.VectorMath;
import dev.ringmaster.model.arch.ExpertPlacement;
import dev.ringmaster.model.arch.RankContext;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A mixture-of-experts MLP: the router picks {@code topK} experts per token; tokens are grouped by
 * expert so that each expert's weights are read once per step for all its tokens; each token's
 * weighted expert outputs are summed in ascending expert order (as transformers does) and the
 * shared experts' output, if any, is added.
 *
 * <p>Three layouts: all experts here (one rank, or TP where each expert holds a slice of its
 * intermediate dimension and the output is a partial sum); a range of whole experts with every
 * token present (EP without all-to-all: partial sum over experts); or EP with all-to-all, where
 * each rank routes its own slice of the tokens, sends each (token, expert) pair's hidden state to
 * the expert's owner, gets the expert output back, combines, and all ranks gather the full output.
 */
final class CpuMoe {
  private final Router router;
  private final DenseMlp[] experts;
  private final ExpertPlacement placement;
  private final int rank;
  private final DenseMlp shared;
  private final int topK;
  private final int hidden;
  private final RankContext a2a;
  private final CpuKernelContext kernels;
  private final MlpTasks tasks;

  /**
   * Creates the layer.
   *
   * @param kernels the vector width and threads the experts' products run with
   * @param router the router over all experts
   * @param experts the experts held here: all of them in id order when {@code placement} is null,
   *     else this rank's experts in the placement's local order
   * @param placement which rank owns which expert (expert parallelism), or null
   * @param rank this rank (the owner of {@code experts} in {@code placement})
   * @param shared shared experts MLP, or null
   * @param topK experts per token
   * @param hidden hidden size
   * @param a2a the rank context when tokens are dispatched by all-to-all, else null
   * @param tasks runs the experts of many-token steps as block tasks
   */
  CpuMoe(
      CpuKernelContext kernels,
      Router router,
      DenseMlp[] experts,
      ExpertPlacement placement,
      int rank,
      DenseMlp shared,
      int topK,
      int hidden,
      RankContext a2a,
      MlpTasks tasks) {
    this.kernels = kernels;
    this.router = router;
    this.experts = experts;
    this.placement = placement;
    this.rank = rank;
    this.shared = shared;
    this.topK = topK;
    this.hidden = hidden;
    this.a2a = a2a;
    this.tasks = tasks;
  }

  /** Whether the output is complete on every rank (all-to-all dispatch), not a partial sum. */
  boolean outputReplicated() {
    return a2a != null;
  }

  /** Index into {@link #experts} of expert {@code id}, or -1 when another rank owns it. */
  private int localSlot(int id) {
    if (placement == null) {
      return id;
    }
    return placement.owner(id) == rank ? placement.localIndex(id) : -1;
  }

  /** Writes the layer's output for {@code n} tokens of {@code x} to {@code out}. */
  void forward(float[] out, float[] x, int n) {
    if (a2a != null) {
      forwardAllToAll(out, x, n);
      return;
    }
    int[] chosen = new int[n * topK];
    float[] weights = new float[n * topK];
    router.route(x, n, chosen, weights);
    Arrays.fill(out, 0, n * hidden, 0f);
    if (n >= MlpTasks.MIN_TOKENS) {
      forwardBlocks(out, x, n, chosen, weights);
      return;
    }
    float[] sharedOut = fusesShared() ? new float[n * hidden] : null;
    float[][] expertOut = runExperts(x, n, chosen, sharedOut);
    combine(out, 0, n, chosen, weights, expertOut, null, null);
    if (sharedOut != null) {
      for (int i = 0; i < n * hidden; i++) {
        out[i] += sharedOut[i];
      }
    } else {
      addShared(out, x, n);
    }
  }

  /**
   * Whether the shared experts run in the routed experts' parallel regions (one for gate and up,
   * one for down), which takes bias-free projections as the routed experts' are.
   */
  private boolean fusesShared() {
    return shared != null
        && shared.gate().bias() == null
        && shared.up().bias() == null
        && shared.down().bias() == null;
  }

  /**
   * {@link #forward} of a many-token step: every local expert's tokens, and all tokens for the
   * shared experts, in blocks of {@link MlpTasks#BLOCK} run as the tasks of one region, each a
   * whole SwiGLU of its block; then the same combine, in ascending expert order, and the shared
   * output added last, as in the two-region form.
   */
  private void forwardBlocks(float[] out, float[] x, int n, int[] chosen, float[] weights) {
    int slots = n * topK;
    int[] count = new int[experts.length + 1];
    for (int slot = 0; slot < slots; slot++) {
      int local = localSlot(chosen[slot]);
      if (local >= 0) {
        count[local + 1]++;
      }
    }
    int blockCount = 0;
    for (int e = 0; e < experts.length; e++) {
      blockCount += (count[e + 1] + MlpTasks.BLOCK - 1) / MlpTasks.BLOCK;
      count[e + 1] += count[e];
    }
    int sharedBlocks = shared == null ? 0 : (n + MlpTasks.BLOCK - 1) / MlpTasks.BLOCK;
    int[] slotsByExpert = new int[count[experts.length]];
    int[] fill = Arrays.copyOf(count, experts.length);
    for (int slot = 0; slot < slots; slot++) {
      int local = localSlot(chosen[slot]);
      if (local >= 0) {
        slotsByExpert[fill[local]++] = slot;
      }
    }
    MlpTasks.Block[] blocks = new MlpTasks.Block[blockCount + sharedBlocks];
    float[][] rowOf = new float[slots][];
    int[] rowOffset = new int[slots];
    int k = 0;
    for (int e = 0; e < experts.length; e++) {
      for (int b = count[e]; b < count[e + 1]; b += MlpTasks.BLOCK) {
        int m = Math.min(MlpTasks.BLOCK, count[e + 1] - b);
        int[] rows = new int[m];
        float[] y = new float[m * hidden];
        for (int r = 0; r < m; r++) {
          int slot = slotsByExpert[b + r];
          rows[r] = slot / topK;
          rowOf[slot] = y;
          rowOffset[slot] = r * hidden;
        }
        blocks[k++] = new MlpTasks.Block(experts[e], rows, y);
      }
    }
    for (int b = 0; b < sharedBlocks; b++) {
      int[] rows = MlpTasks.rows(b * MlpTasks.BLOCK, Math.min(n, (b + 1) * MlpTasks.BLOCK));
      blocks[k++] = new MlpTasks.Block(shared, rows, new float[rows.length * hidden]);
    }
    tasks.run(blocks, x);
    combine(out, 0, n, chosen, weights, rowOf, rowOffset, null);
    for (int b = 0; b < sharedBlocks; b++) {
      float[] s = blocks[blockCount + b].out();
      int o = b * MlpTasks.BLOCK * hidden;
      for (int i = 0; i < s.length; i++) {
        out[o + i] += s[i];
      }
    }
  }

  /**
   * Runs every local expert on the tokens routed to it, and the shared experts on every token into
   * {@code sharedOut} when it is given. Returns, per (token, slot), the expert output row (null
   * when the expert is not local).
   */
  private float[][] runExperts(float[] x, int n, int[] chosen, float[] sharedOut) {
    // Slots grouped by local expert, in slot order (a counting sort: no boxed lists per step).
    int[] count = new int[experts.length + 1];
    for (int slot = 0; slot < n * topK; slot++) {
      int local = localSlot(chosen[slot]);
      if (local >= 0) {
        count[local + 1]++;
      }
    }
    for (int e = 0; e < experts.length; e++) {
      count[e + 1] += count[e];
    }
    int[] slotsByExpert = new int[count[experts.length]];
    int[] fill = Arrays.copyOf(count, experts.length);
    for (int slot = 0; slot < n * topK; slot++) {
      int local = localSlot(chosen[slot]);
      if (local >= 0) {
        slotsByExpert[fill[local]++] = slot;
      }
    }
    // All experts' projections run as one parallel region (a step touching a few small experts
    // still uses every core); each reads its weights once for all of its tokens.
    List<Integer> active = new ArrayList<>();
    List<int[]> rowsOf = new ArrayList<>();
    for (int e = 0; e < experts.length; e++) {
      if (count[e + 1] > count[e]) {
        active.add(e);
        int[] rows = new int[count[e + 1] - count[e]];
        for (int r = 0; r < rows.length; r++) {
          rows[r] = slotsByExpert[count[e] + r] / topK;
        }
        rowsOf.add(rows);
      }
    }
    float[][] gate = new float[active.size()][];
    float[][] up = new float[active.size()][];
    List<CpuMatmul.Job> jobs = new ArrayList<>();
    for (int a = 0; a < active.size(); a++) {
      DenseMlp mlp = experts[active.get(a)];
      int m = rowsOf.get(a).length;
      gate[a] = new float[m * mlp.gate().out()];
      up[a] = new float[m * mlp.up().out()];
      jobs.add(new CpuMatmul.Job(mlp.gate().weight(), x, rowsOf.get(a), gate[a]));
      jobs.add(new CpuMatmul.Job(mlp.up().weight(), x, rowsOf.get(a), up[a]));
    }
    float[] sharedGate = null;
    float[] sharedUp = null;
    if (sharedOut != null) {
      sharedGate = new float[n * shared.gate().out()];
      sharedUp = new float[n * shared.up().out()];
      jobs.add(CpuMatmul.Job.of(shared.gate().weight(), x, n, sharedGate));
      jobs.add(CpuMatmul.Job.of(shared.up().weight(), x, n, sharedUp));
    }
    CpuMatmul.matmulMany(kernels, jobs);
    jobs.clear();
    if (sharedOut != null) {
      CpuOps.siluMul(sharedGate, sharedGate, sharedUp, n * shared.gate().out());
      jobs.add(CpuMatmul.Job.of(shared.down().weight(), sharedGate, n, sharedOut));
    }
    float[][] down = new float[active.size()][];
    for (int a = 0; a < active.size(); a++) {
      DenseMlp mlp = experts[active.get(a)];
      int m = rowsOf.get(a).length;
      CpuOps.siluMul(gate[a], gate[a], up[a], m * mlp.gate().out());
      down[a] = new float[m * hidden];
      jobs.add(CpuMatmul.Job.of(mlp.down().weight(), gate[a], m, down[a]));
    }
    CpuMatmul.matmulMany(kernels, jobs);
    float[][] result = new float[n * topK][];
    for (int a = 0; a < active.size(); a++) {
      int first = count[active.get(a)];
      for (int r = 0; r < rowsOf.get(a).length; r++) {
        result[slotsByExpert[first + r]] =
            Arrays.copyOfRange(down[a], r * hidden, (r + 1) * hidden);
      }
    }
    return result;
  }

  /**
   * Adds each token's weighted expert outputs in ascending expert order. Rows come from {@code
   * rows[slot]} (from {@code rowOffsets[slot]} where given), or, when {@code remote} is given, from
   * {@code remote[slot]} for experts elsewhere.
   */
  private void combine(
      float[] out,
      int outRow0,
      int n,
      int[] chosen,
      float[] weights,
      float[][] rows,
      int[] rowOffsets,
      float[][] remote) {
    int[] order = new int[topK];
    for (int t = 0; t < n; t++) {
      int base = t * topK;
      // The token's slots by ascending expert id (insertion sort: topK is small, ids distinct).
      for (int j = 0; j < topK; j++) {
        int i = j;
        while (i > 0 && chosen[base + order[i - 1]] > chosen[base + j]) {
          order[i] = order[i - 1];
          i--;
        }
        order[i] = j;
      }
      int o = (outRow0 + t) * hidden;
      for (int j : order) {
        float[] y =
            rows[base + j] != null ? rows[base + j] : remote != null ? remote[base + j] : null;
        if (y == null) {
          continue;
        }
        float w = weights[base + j];
        int yo = rows[base + j] != null && rowOffsets != null ? rowOffsets[base + j] : 0;
        VectorMath.addScaled(w, y, yo, out, o, hidden);
      }
    }
  }

  private void addShared(float[] out, float[] x, int n) {
    if (shared != null) {
      float[] s = new float[n * hidden];
      shared.forward(s, x, n);
      for (int i = 0; i < n * hidden; i++) {
        out[i] += s[i];
      }
    }
  }

  private void forwardAllToAll(float[] out, float[] x, int n) {
    int world = a2a.size();
    int rank = a2a.rank();
    int per = (n + world - 1) / world; // tokens per rank, last ranks may have fewer
    int t0 = Math.min(n, rank * per);
    int mine = Math.min(n, t0 + per) - t0;
    float[] xs = Arrays.copyOfRange(x, t0 * hidden, (t0 + mine) * hidden);
    int[] chosen = new int[mine * topK];
    float[] weights = new float[mine * topK];
    router.route(xs, mine, chosen, weights);
    // Dispatch: one row per (token, slot) for a remote owner: [expert id, hidden...].
    int row = hidden + 1;
    int[] sendRows = new int[world];
    for (int s = 0; s < mine * topK; s++) {
      sendRows[placement.owner(chosen[s])]++;
    }
    int[] sendCounts = new int[world];
    int[] offsets = new int[world + 1];
    for (int r = 0; r < world; r++) {
      sendCounts[r] = sendRows[r] * row;
      offsets[r + 1] = offsets[r] + sendCounts[r];
    }
    float[] send = new float[offsets[world]];
    int[] cursor = Arrays.copyOf(offsets, world);
    int[] slotOrder = new int[mine * topK];
    int k = 0;
    for (int r = 0; r < world; r++) {
      for (int s = 0; s < mine * topK; s++) {
        if (placement.owner(chosen[s]) == r) {
          slotOrder[k++] = s;
          send[cursor[r]] = chosen[s];
          System.arraycopy(xs, (s / topK) * hidden, send, cursor[r] + 1, hidden);
          cursor[r] += row;
        }
      }
    }
    int[] recvCounts = a2a.group().exchangeCounts(sendCounts);
    int recvTotal = Arrays.stream(recvCounts).sum();
    float[] recv = new float[recvTotal];
    a2a.group().allToAll(send, sendCounts, recv, recvCounts);
    // Compute the received rows with the local experts, batched per expert.
    int m = recvTotal / row;
    float[] in = new float[m * hidden];
    int[] expertOf = new int[m];
    for (int i = 0; i < m; i++) {
      expertOf[i] = (int) recv[i * row];
      System.arraycopy(recv, i * row + 1, in, i * hidden, hidden);
    }
    float[] results = new float[m * hidden];
    int[] owned = placement.expertsOf(rank);
    for (int e = 0; e < experts.length; e++) {
      int id = owned[e];
      int cnt = 0;
      for (int i = 0; i < m; i++) {
        cnt += expertOf[i] == id ? 1 : 0;
      }
      if (cnt == 0) {
        continue;
      }
      float[] batch = new float[cnt * hidden];
      int[] idx = new int[cnt];
      int c = 0;
      for (int i = 0; i < m; i++) {
        if (expertOf[i] == id) {
          idx[c] = i;
          System.arraycopy(in, i * hidden, batch, c * hidden, hidden);
          c++;
        }
      }
      float[] y = new float[cnt * hidden];
      experts[e].forward(y, batch, cnt);
      for (int i = 0; i < cnt; i++) {
        System.arraycopy(y, i * hidden, results, idx[i] * hidden, hidden);
      }
    }
    // Combine: send the results back along the reverse route.
    int[] backSend = new int[world];
    int[] backRecv = new int[world];
    for (int r = 0; r < world; r++) {
      backSend[r] = recvCounts[r] / row * hidden;
      backRecv[r] = sendCounts[r] / row * hidden;
    }
    float[] back = new float[Arrays.stream(backRecv).sum()];
    a2a.group().allToAll(results, backSend, back, backRecv);
    float[][] rows = new float[mine * topK][];
    for (int i = 0; i < slotOrder.length; i++) {
      rows[slotOrder[i]] = Arrays.copyOfRange(back, i * hidden, (i + 1) * hidden);
    }
    float[] local = new float[per * hidden];
    combine(local, 0, mine, chosen, weights, rows, null, null);
    if (shared != null && mine > 0) {
      float[] s = new float[mine * hidden];
      shared.forward(s, xs, mine);
      for (int i = 0; i < mine * hidden; i++) {
        local[i] += s[i];
      }
    }
    // Every rank needs every token's output for the next (tensor-parallel) attention.
    float[] gathered = new float[world * per * hidden];
    a2a.group().allGather(local, 0, per * hidden, gathered);
    System.arraycopy(gathered, 0, out, 0, n * hidden);
  }
}
