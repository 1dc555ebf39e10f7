package dev.ringmaster.sim.calibrate;

/**
 * Least squares (normal equations, Gaussian elimination) and minimax fits for small dense problems.
 */
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

  /**
   * Solves {@code min |X b - y|} subject to {@code b >= 0} (non-negative least squares), for the
   * few unknowns of a calibration fit: every subset of coefficients held at zero is tried, and the
   * best solution whose other coefficients come out non-negative wins (the optimum is one of them).
   * Collinear subsets are skipped; where no subset is feasible every coefficient is zero.
   *
   * @param x rows of regressors, all of the same length (at most 10 columns)
   * @param y observations
   * @return coefficients, one per column of x, none negative
   */
  public static double[] nonNegative(double[][] x, double[] y) {
    int p = x[0].length;
    if (p > 10) {
      throw new IllegalArgumentException("non-negative least squares: at most 10 unknowns");
    }
    double[] best = new double[p];
    double bestSq = sumSquares(x, y, best);
    for (int mask = 1; mask < 1 << p; mask++) {
      int[] free = new int[Integer.bitCount(mask)];
      for (int j = 0, k = 0; j < p; j++) {
        if ((mask & (1 << j)) != 0) {
          free[k++] = j;
        }
      }
      if (free.length > x.length) {
        continue;
      }
      double[][] sub = new double[x.length][free.length];
      for (int r = 0; r < x.length; r++) {
        for (int k = 0; k < free.length; k++) {
          sub[r][k] = x[r][free[k]];
        }
      }
      double[] b;
      try {
        b = solve(sub, y);
      } catch (IllegalArgumentException collinear) {
        continue;
      }
      double[] full = new double[p];
      boolean feasible = true;
      for (int k = 0; k < free.length; k++) {
        feasible &= b[k] >= 0 && Double.isFinite(b[k]);
        full[free[k]] = b[k];
      }
      if (!feasible) {
        continue;
      }
      double sq = sumSquares(x, y, full);
      if (sq < bestSq * (1 - 1e-12)) {
        best = full;
        bestSq = sq;
      }
    }
    return best;
  }

  private static double sumSquares(double[][] x, double[] y, double[] b) {
    double s = 0;
    for (int i = 0; i < x.length; i++) {
      double r = dot(x[i], b) - y[i];
      s += r * r;
    }
    return s;
  }

  /**
   * Solves {@code min max_i |(X b - y)_i|} for b (the Chebyshev, or minimax, fit) by Lawson's
   * iteratively reweighted least squares: rows whose residual stays large gain weight until the
   * largest residuals level out. Use it where a fit is judged by its worst point.
   *
   * @param x rows of regressors, all of the same length
   * @param y observations
   * @param iterations reweighting steps (a few hundred settle small problems to well below 1%)
   * @return coefficients, one per column of x
   */
  public static double[] minimax(double[][] x, double[] y, int iterations) {
    return lawson(x, y, iterations, LeastSquares::solve);
  }

  /**
   * {@link #minimax} with every coefficient non-negative: Lawson's reweighting around {@link
   * #nonNegative} instead of the unconstrained solve. The best coefficients seen are returned, so
   * the result is never worse than the non-negative least-squares start.
   *
   * @param x rows of regressors, all of the same length (at most 10 columns)
   * @param y observations
   * @param iterations reweighting steps
   * @return coefficients, one per column of x, none negative
   */
  public static double[] nonNegativeMinimax(double[][] x, double[] y, int iterations) {
    return lawson(x, y, iterations, LeastSquares::nonNegative);
  }

  /**
   * Lawson's reweighting around a weighted least-squares {@code fit}, starting from the unweighted
   * fit; returns the coefficients with the smallest largest residual seen.
   */
  private static double[] lawson(
      double[][] x,
      double[] y,
      int iterations,
      java.util.function.BiFunction<double[][], double[], double[]> fit) {
    int m = x.length;
    double[] u = new double[m];
    java.util.Arrays.fill(u, 1.0 / m);
    double[] best = fit.apply(x, y);
    double bestMax = maxAbsResidual(x, y, best);
    double[][] xw = new double[m][];
    double[] yw = new double[m];
    for (int it = 0; it < iterations && bestMax > 0; it++) {
      for (int i = 0; i < m; i++) {
        double s = Math.sqrt(u[i]);
        xw[i] = new double[x[i].length];
        for (int j = 0; j < x[i].length; j++) {
          xw[i][j] = x[i][j] * s;
        }
        yw[i] = y[i] * s;
      }
      double[] b;
      try {
        b = fit.apply(xw, yw);
      } catch (IllegalArgumentException fewerRowsLeftThanUnknowns) {
        break; // weights of rows fitted exactly fell to zero: nothing left to level out
      }
      double total = 0;
      double max = 0;
      for (int i = 0; i < m; i++) {
        double r = Math.abs(dot(x[i], b) - y[i]);
        u[i] *= r;
        total += u[i];
        max = Math.max(max, r);
      }
      if (max < bestMax) {
        best = b;
        bestMax = max;
      }
      if (total <= 0) {
        break; // every residual zero: exact
      }
      for (int i = 0; i < m; i++) {
        u[i] /= total;
      }
    }
    return best;
  }

  private static double maxAbsResidual(double[][] x, double[] y, double[] b) {
    double max = 0;
    for (int i = 0; i < x.length; i++) {
      max = Math.max(max, Math.abs(dot(x[i], b) - y[i]));
    }
    return max;
  }

  private static double dot(double[] a, double[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) {
      s += a[i] * b[i];
    }
    return s;
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
