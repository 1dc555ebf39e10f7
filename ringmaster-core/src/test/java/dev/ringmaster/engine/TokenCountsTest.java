package dev.ringmaster.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TokenCountsTest {
  @Test
  void countsOutputsPerDistinctTokenAcrossGrowth() {
    SplittableRandom r = new SplittableRandom(4);
    int[] prompt = new int[300];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = r.nextInt(5000);
    }
    TokenCounts c = new TokenCounts(prompt);
    Map<Integer, Integer> want = new HashMap<>();
    for (int t : prompt) {
      want.putIfAbsent(t, 0);
    }
    for (int i = 0; i < 3000; i++) {
      int t = r.nextInt(8000);
      c.addOutput(t);
      want.merge(t, 1, Integer::sum);
    }
    assertThat(c.size()).isEqualTo(want.size());
    Map<Integer, Integer> got = new HashMap<>();
    for (int i = 0; i < c.size(); i++) {
      got.put(c.token(i), c.outputCount(i));
    }
    assertThat(got).isEqualTo(want);
    assertThat(c.outputCountOf(prompt[0])).isEqualTo(want.get(prompt[0]));
    assertThat(c.outputCountOf(-5)).isZero();
  }
}
