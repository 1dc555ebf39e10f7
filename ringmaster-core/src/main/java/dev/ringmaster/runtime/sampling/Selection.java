package dev.ringmaster.runtime.sampling;

/** Order statistics over float arrays without sorting them. */
final class Selection {
  private Selection() {}

  /**
   * The k-th largest (1-based, counting repeats) of {@code a[0, n)}, reordering {@code a}: a
   * three-way quickselect (many equal values do not make it quadratic) with a median-of-three
   * pivot.
   */
  static float kthLargest(float[] a, int n, int k) {
    if (k < 1 || k > n) {
      throw new IllegalArgumentException("k must be in [1, " + n + "], got " + k);
    }
    int lo = 0;
    int hi = n - 1;
    int want = k - 1; // index in descending order
    while (true) {
      if (lo == hi) {
        return a[lo];
      }
      float p = median(a[lo], a[(lo + hi) >>> 1], a[hi]);
      // Partition descending: [lo, gt) > p, [gt, i) == p, (lt, hi] < p.
      int gt = lo;
      int i = lo;
      int lt = hi;
      while (i <= lt) {
        float v = a[i];
        if (v > p) {
          a[i++] = a[gt];
          a[gt++] = v;
        } else if (v < p) {
          a[i] = a[lt];
          a[lt--] = v;
        } else {
          i++;
        }
      }
      if (want < gt) {
        hi = gt - 1;
      } else if (want <= lt) {
        return p;
      } else {
        lo = lt + 1;
      }
    }
  }

  private static float median(float a, float b, float c) {
    return Math.max(Math.min(a, b), Math.min(Math.max(a, b), c));
  }
}
