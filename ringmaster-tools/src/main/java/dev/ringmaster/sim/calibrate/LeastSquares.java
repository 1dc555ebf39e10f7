package dev.ringmaster.sim.calibrate;

/** Ordinary least squares for small dense problems (normal equations, Gaussian elimination). */
public final class LeastSquares {
  private LeastSquares() {}

  /**
   * Solves {@code min |X b - y|} for b.
   *
   * @param x rows of regressors, all of the same length
   * @param y observations
   * @return coefficients, one per column of x
   */
  public static double[] solve(double[][] x, double[] y) {
    int p = x[0].length;
    double[][] a = new double[p][p + 1];
    for (int r = 0; r < x.length; r++) {
      for (int i = 0; i < p; i++) {
        for (int j = 0; j < p; j++) {
          a[i][j] += x[r][i] * x[r][j];
        }
        a[i][p] += x[r][i] * y[r];
      }
    }
    for (int c = 0; c < p; c++) {
      int piv = c;
      for (int r = c + 1; r < p; r++) {
        if (Math.abs(a[r][c]) > Math.abs(a[piv][c])) {
          piv = r;
        }
      }
      double[] t = a[c];
      a[c] = a[piv];
      a[piv] = t;
      if (Math.abs(a[c][c]) < 1e-300) {
        throw new IllegalArgumentException("least squares: regressors are collinear");
      }
      for (int r = 0; r < p; r++) {
        if (r != c) {
          double f = a[r][c] / a[c][c];
          for (int k = c; k <= p; k++) {
            a[r][k] -= f * a[c][k];
          }
        }
      }
    }
    double[] b = new double[p];
    for (int i = 0; i < p; i++) {
      b[i] = a[i][p] / a[i][i];
    }
    return b;
  }

  /** Slope of {@code y = s x} through the origin. */
  public static double slopeThroughOrigin(double[] x, double[] y) {
    double xy = 0;
    double xx = 0;
    for (int i = 0; i < x.length; i++) {
      xy += x[i] * y[i];
      xx += x[i] * x[i];
    }
    return xy / xx;
  }
}
