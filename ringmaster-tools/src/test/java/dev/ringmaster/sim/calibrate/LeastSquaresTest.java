package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** Least squares and the minimax fit against answers worked by hand. */
class LeastSquaresTest {

  @Test
  void minimaxConstantIsTheMidrangeWhereLeastSquaresIsTheMean() {
    double[][] x = {{1}, {1}, {1}};
    double[] y = {0, 1, 3};
    assertThat(LeastSquares.solve(x, y)[0]).isCloseTo(4.0 / 3, within(1e-12));
    // the largest residual is smallest (1.5) at the midpoint of the extremes
    assertThat(LeastSquares.minimax(x, y, 300)[0]).isCloseTo(1.5, within(1e-3));
  }

  @Test
  void minimaxLineLevelsTheThreeWorstResiduals() {
    // y = x^2 on 0, 1, 2: the best line is 2x - 1/2, off by 1/2 at all three points
    double[][] x = {{1, 0}, {1, 1}, {1, 2}};
    double[] y = {0, 1, 4};
    double[] b = LeastSquares.minimax(x, y, 300);
    assertThat(b[1]).isCloseTo(2, within(1e-3));
    assertThat(b[0]).isCloseTo(-0.5, within(1e-3));
  }

  @Test
  void minimaxRecoversAnExactLine() {
    double[][] x = {{1, 1}, {1, 2}, {1, 5}, {1, 9}};
    double[] y = {3, 5, 11, 19};
    double[] b = LeastSquares.minimax(x, y, 300);
    assertThat(b[0]).isCloseTo(1, within(1e-9));
    assertThat(b[1]).isCloseTo(2, within(1e-9));
  }
}
