package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CostedLoop;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import java.util.Arrays;

/**
 * SwiGLU MLPs over blocks of tokens as the tasks of one parallel region: each task runs gate and
 * up, the SiLU gate and the down projection of one block on one thread ({@link
 * DenseMlp#forwardRowsHere}). A many-token step (a prefill) then has one region per MLP layer
 * instead of two, and its SiLU gates, which are scalar exponentials, run on every thread instead of
 * between the regions on the caller. Blocks go largest first, so uneven expert loads still balance.
 * Every output is its kernels' chain over the same inputs, so the results are those of {@link
 * DenseMlp#forward} whatever the blocks or threads.
 */
final class MlpTasks {
  /** Tokens per block: enough to amortise a block's weight reads (from cache), small to balance. */
  static final int BLOCK = 16;

  /** Steps of at least this many tokens run their MLPs as block tasks. */
  static final int MIN_TOKENS = 32;

  private final CostedLoop loop;

  /** Tasks on {@code kernels}' pool, where a call's work repays a region. */
  MlpTasks(CpuKernelContext kernels) {
    this.loop = new CostedLoop(kernels);
  }

  /**
   * One task: {@code mlp} on rows {@code xRows} of the input, output {@code [xRows.length, hidden]}
   * into {@code out}.
   */
  record Block(DenseMlp mlp, int[] xRows, float[] out) {}

  /** Runs every block over rows of {@code x}, and returns when all are done. */
  void run(Block[] blocks, float[] x) {
    Integer[] order = new Integer[blocks.length];
    double cost = 0;
    for (int i = 0; i < blocks.length; i++) {
      order[i] = i;
      cost += work(blocks[i]);
    }
    Arrays.sort(order, (a, b) -> Double.compare(work(blocks[b]), work(blocks[a])));
    loop.run(
        blocks.length,
        cost,
        i -> {
          Block b = blocks[order[i]];
          b.mlp().forwardRowsHere(b.out(), x, b.xRows());
        });
  }

  /** {@code mlp} on the first {@code n} rows of {@code x} into {@code out}, in blocks. */
  void forward(DenseMlp mlp, float[] out, float[] x, int n) {
    int hidden = mlp.down().out();
    Block[] blocks = new Block[(n + BLOCK - 1) / BLOCK];
    for (int k = 0; k < blocks.length; k++) {
      int[] r = rows(k * BLOCK, Math.min(n, (k + 1) * BLOCK));
      blocks[k] = new Block(mlp, r, new float[r.length * hidden]);
    }
    run(blocks, x);
    for (int k = 0; k < blocks.length; k++) {
      float[] o = blocks[k].out();
      System.arraycopy(o, 0, out, k * BLOCK * hidden, o.length);
    }
  }

  /** The rows {@code from .. to - 1}. */
  static int[] rows(int from, int to) {
    int[] r = new int[to - from];
    for (int i = 0; i < r.length; i++) {
      r[i] = from + i;
    }
    return r;
  }

  private static double work(Block b) {
    return b.xRows().length * b.mlp().macsPerToken();
  }
}
