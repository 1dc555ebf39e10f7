package dev.ringmaster.tools.benchserve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The values numpy gives for the same samples (np.mean, np.median, np.std, np.percentile). */
class PercentilesTest {
  @Test
  void matchesNumpyOnASmallSample() {
    Percentiles p = new Percentiles(new double[] {4, 1, 3, 2});
    assertThat(p.mean()).isEqualTo(2.5);
    assertThat(p.median()).isEqualTo(2.5);
    assertThat(p.std()).isCloseTo(1.118033988749895, within(1e-12)); // np.std([1,2,3,4])
    assertThat(p.percentile(99)).isCloseTo(3.97, within(1e-12)); // np.percentile(.., 99)
    assertThat(p.percentile(95)).isCloseTo(3.85, within(1e-12));
    assertThat(p.percentile(0)).isEqualTo(1);
    assertThat(p.percentile(100)).isEqualTo(4);
    assertThat(p.max()).isEqualTo(4);
  }

  @Test
  void oddCountsTakeTheMiddleAndHundredValuesInterpolate() {
    assertThat(new Percentiles(new double[] {5, 1, 9}).median()).isEqualTo(5);
    double[] v = new double[100];
    for (int i = 0; i < v.length; i++) {
      v[i] = i + 1; // 1..100
    }
    Percentiles p = new Percentiles(v);
    assertThat(p.percentile(99)).isCloseTo(99.01, within(1e-9)); // np.percentile(range(1,101), 99)
    assertThat(p.median()).isEqualTo(50.5);
  }

  @Test
  void anEmptySampleGivesZerosAsSglangDoes() {
    Percentiles p = new Percentiles(new double[0]);
    assertThat(p.mean()).isZero();
    assertThat(p.median()).isZero();
    assertThat(p.std()).isZero();
    assertThat(p.percentile(99)).isZero();
    assertThat(p.max()).isZero();
  }

  @Test
  void oneValueIsEveryStatistic() {
    Percentiles p = new Percentiles(new double[] {7});
    assertThat(p.percentile(99)).isEqualTo(7);
    assertThat(p.std()).isZero();
  }
}
