package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

class PoissonArrivalsTest {
  @Test
  void gapsAreExponentialWithMeanOneOverRate() {
    PoissonArrivals a = new PoissonArrivals(8, 7);
    int n = 40_000;
    double sum = 0;
    double sumSq = 0;
    int longerThanMean = 0;
    for (int i = 0; i < n; i++) {
      double g = a.nextGapSeconds();
      assertThat(g).isPositive();
      sum += g;
      sumSq += g * g;
      if (g > 1.0 / 8) {
        longerThanMean++;
      }
    }
    double mean = sum / n;
    // standard error of the mean is 0.125 / sqrt(40000) = 0.000625; 4 of them
    assertThat(mean).isCloseTo(0.125, within(0.0025));
    // an exponential's standard deviation equals its mean
    assertThat(Math.sqrt(sumSq / n - mean * mean)).isCloseTo(0.125, within(0.005));
    // P(gap > mean) = 1/e
    assertThat((double) longerThanMean / n).isCloseTo(Math.exp(-1), within(0.01));
  }

  @Test
  void theSameSeedGivesTheSameArrivals() {
    PoissonArrivals a = new PoissonArrivals(3, 42);
    PoissonArrivals b = new PoissonArrivals(3, 42);
    PoissonArrivals c = new PoissonArrivals(3, 43);
    double[] x = new double[5];
    boolean differs = false;
    for (int i = 0; i < x.length; i++) {
      double g = a.nextGapSeconds();
      assertThat(b.nextGapSeconds()).isEqualTo(g);
      differs |= c.nextGapSeconds() != g;
    }
    assertThat(differs).isTrue();
  }

  @Test
  void anInfiniteRateSendsAllAtOnceAndNonPositiveRatesAreRefused() {
    PoissonArrivals a = new PoissonArrivals(Double.POSITIVE_INFINITY, 1);
    assertThat(a.nextGapSeconds()).isZero();
    assertThat(a.nextGapSeconds()).isZero();
    assertThatThrownBy(() -> new PoissonArrivals(0, 1)).hasMessageContaining("positive");
    assertThatThrownBy(() -> new PoissonArrivals(Double.NaN, 1)).hasMessageContaining("positive");
  }
}
