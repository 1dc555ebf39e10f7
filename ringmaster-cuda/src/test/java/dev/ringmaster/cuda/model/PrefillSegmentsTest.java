package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.model.PrefillSegments.Plan;
import dev.ringmaster.cuda.model.PrefillSegments.Range;
import dev.ringmaster.cuda.model.PrefillSegments.Run;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The host plan of a prefill chunk (CPU only): which tokens take the GEMM runs, which the split
 * kernels, and which ranges of tokens get the absorbed query and output projections. A mixed step
 * of expanded prompt runs and decode rows must project the decode rows only.
 */
class PrefillSegmentsTest {
  private static final int MAX_GEMM = 4096;
  private static final int EXPANDED_MAX = 1024;

  /** A step's tokens: each part is {sequence, first position, tokens}, laid out in order. */
  private static Plan plan(int[]... parts) {
    List<int[]> tokens = new ArrayList<>();
    for (int[] p : parts) {
      for (int i = 0; i < p[2]; i++) {
        tokens.add(new int[] {p[0], p[1] + i});
      }
    }
    int n = tokens.size();
    int[] seq = new int[n];
    int[] pos = new int[n];
    for (int i = 0; i < n; i++) {
      seq[i] = tokens.get(i)[0];
      pos[i] = tokens.get(i)[1];
    }
    return PrefillSegments.planOf(n, seq, pos, MAX_GEMM, EXPANDED_MAX);
  }

  @Test
  void decodeRowsBeforeExpandedPromptRunsAreTheOnlyAbsorbedTokens() {
    // 64 decode rows (sequences 0..63 at context 600), then two 512-token prompts.
    int[][] parts = new int[66][];
    for (int s = 0; s < 64; s++) {
      parts[s] = new int[] {s, 600, 1};
    }
    parts[64] = new int[] {64, 0, 512};
    parts[65] = new int[] {65, 0, 512};
    Plan p = plan(parts);
    assertThat(p.gemmRuns())
        .containsExactly(new Run(64, 512, 64, 0, true), new Run(576, 512, 65, 0, true));
    assertThat(p.splitTokens()).hasSize(64).startsWith(0, 1).endsWith(63);
    assertThat(p.absorbedRanges()).containsExactly(new Range(0, 64));
  }

  @Test
  void decodeRowsBetweenPromptRunsGiveOneRangeEach() {
    Plan p =
        plan(
            new int[] {0, 10, 1},
            new int[] {1, 0, 100},
            new int[] {2, 30, 1},
            new int[] {3, 31, 1},
            new int[] {4, 0, 50},
            new int[] {5, 7, 1});
    assertThat(p.gemmRuns())
        .containsExactly(new Run(1, 100, 1, 0, true), new Run(103, 50, 4, 0, true));
    assertThat(p.splitTokens()).containsExactly(0, 101, 102, 153);
    assertThat(p.absorbedRanges())
        .containsExactly(new Range(0, 1), new Range(101, 2), new Range(153, 1));
  }

  @Test
  void absorbedRunsJoinTheDecodeRowsBesideThem() {
    // A prompt chunk at positions 1000..1099 exceeds the expanded form's context: absorbed, and
    // merged with the decode rows it touches; the expanded run after them is left out.
    Plan p =
        plan(
            new int[] {0, 5, 1},
            new int[] {1, 1000, 100},
            new int[] {2, 9, 1},
            new int[] {3, 0, 40});
    assertThat(p.gemmRuns())
        .containsExactly(new Run(1, 100, 1, 1000, false), new Run(102, 40, 3, 0, true));
    assertThat(p.splitTokens()).containsExactly(0, 101);
    assertThat(p.absorbedRanges()).containsExactly(new Range(0, 102));
  }

  @Test
  void shortRunsAndRunsPastTheGemmContextTakeTheSplitKernels() {
    Plan p = plan(new int[] {0, 0, 15}, new int[] {1, 4090, 20}, new int[] {2, 0, 16});
    assertThat(p.gemmRuns()).containsExactly(new Run(35, 16, 2, 0, true));
    assertThat(p.splitTokens()).hasSize(35).startsWith(0).endsWith(34);
    assertThat(p.absorbedRanges()).containsExactly(new Range(0, 35));
  }

  @Test
  void aPurePromptChunkInTheExpandedFormNeedsNoAbsorbedProjections() {
    Plan p = plan(new int[] {0, 0, 300}, new int[] {1, 200, 700});
    assertThat(p.gemmRuns()).hasSize(2).allMatch(Run::expanded);
    assertThat(p.splitTokens()).isEmpty();
    assertThat(p.absorbedRanges()).isEmpty();
  }

  @Test
  void aRunEndingExactlyAtTheExpandedLimitIsExpanded() {
    Plan p = plan(new int[] {0, EXPANDED_MAX - 32, 32}, new int[] {1, EXPANDED_MAX - 31, 32});
    assertThat(p.gemmRuns())
        .containsExactly(
            new Run(0, 32, 0, EXPANDED_MAX - 32, true),
            new Run(32, 32, 1, EXPANDED_MAX - 31, false));
    assertThat(p.absorbedRanges()).containsExactly(new Range(32, 32));
  }
}
