package dev.ringmaster.engine.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Context lookup: longest match first, latest occurrence first, continuation cut at the end. */
class NgramDrafterTest {
  @Test
  void proposesWhatFollowedTheLatestOccurrenceOfTheLongestMatchingSuffix() {
    // Suffix [7, 8] occurs at 0 (followed by 1 2 3) and at 5 (followed by 4 5 ...).
    int[] context = {7, 8, 1, 2, 3, 7, 8, 4, 5, 6, 9, 7, 8};
    Draft d = new NgramDrafter(1, 3).propose(context, context.length, 3);
    assertThat(d.tokens()).containsExactly(4, 5, 6);
    assertThat(d.probabilities()).isNull();
  }

  @Test
  void aLongerMatchWinsOverALaterShorterOne() {
    // [1, 2, 3] matches at 0 (then 10); [2, 3] alone also at 5 (then 20), later.
    int[] context = {1, 2, 3, 10, 11, 2, 3, 20, 1, 2, 3};
    assertThat(new NgramDrafter(1, 3).propose(context, context.length, 1).tokens())
        .containsExactly(10);
    assertThat(new NgramDrafter(1, 2).propose(context, context.length, 1).tokens())
        .containsExactly(20);
  }

  @Test
  void theContinuationStopsAtTheEndOfTheContextAndOnlyTheGivenLengthCounts() {
    int[] context = {5, 6, 5, 6, 99, 99};
    // Of the first 4 tokens: suffix [5, 6] matches at 0, followed by 5, 6 (then the end).
    assertThat(new NgramDrafter(2, 2).propose(context, 4, 8).tokens()).containsExactly(5, 6);
  }

  @Test
  void noMatchProposesNothing() {
    int[] context = {1, 2, 3, 4};
    assertThat(new NgramDrafter(1, 4).propose(context, 4, 4).length()).isZero();
    assertThat(new NgramDrafter(1, 4).propose(new int[] {3}, 1, 4).length()).isZero();
  }

  @Test
  void badMatchLengthsAreRefused() {
    assertThatThrownBy(() -> new NgramDrafter(0, 2)).hasMessageContaining("1 <= min <= max");
    assertThatThrownBy(() -> new NgramDrafter(3, 2)).hasMessageContaining("1 <= min <= max");
  }
}
