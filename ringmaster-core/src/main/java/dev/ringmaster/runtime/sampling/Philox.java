package dev.ringmaster.runtime.sampling;

/**
 * The counter-based Philox4x32-10 generator (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11) as the device samplers compute it, so the CPU and a GPU draw the same uniform for a
 * (seed, step, round): no generator state to carry between steps, batches or backends.
 */
public final class Philox {
  private static final int M0 = 0xD2511F53;
  private static final int M1 = 0xCD9E8D57;
  private static final int W0 = 0x9E3779B9;
  private static final int W1 = 0xBB67AE85;

  private Philox() {}

  /**
   * The first 32-bit output of Philox4x32-10 with key {@code seed} (low word first) and counter
   * ({@code step} low, {@code step} high, {@code round}, 0).
   */
  public static int bits(long seed, long step, int round) {
    int c0 = (int) step;
    int c1 = (int) (step >>> 32);
    int c2 = round;
    int c3 = 0;
    int k0 = (int) seed;
    int k1 = (int) (seed >>> 32);
    for (int r = 0; r < 10; r++) {
      long p0 = (M0 & 0xffffffffL) * (c0 & 0xffffffffL);
      long p1 = (M1 & 0xffffffffL) * (c2 & 0xffffffffL);
      int hi0 = (int) (p0 >>> 32);
      int lo0 = (int) p0;
      int hi1 = (int) (p1 >>> 32);
      int lo1 = (int) p1;
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
      k0 += W0;
      k1 += W1;
    }
    return c0;
  }

  /**
   * A uniform in [0, 1) with 24 random bits (exactly the float the device computes), for a (seed,
   * step, round).
   */
  public static double uniform(long seed, long step, int round) {
    return (bits(seed, step, round) >>> 8) * 0x1p-24;
  }
}
