package dev.ringmaster.model.arch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.arch.ParallelConfig.MoeA2aBackend;
import org.junit.jupiter.api.Test;

/** The layouts {@link ParallelConfig} accepts and the messages for those it refuses. */
class ParallelConfigTest {

  @Test
  void expertParallelGroupIsTheTensorParallelGroup() {
    assertThatThrownBy(() -> new ParallelConfig(4, 2, MoeA2aBackend.NONE))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--ep-size must be 1 or equal to --tp-size");
    assertThat(new ParallelConfig(4, 4, MoeA2aBackend.NONE).expertParallel()).isTrue();
    assertThat(new ParallelConfig(4, 1, MoeA2aBackend.NONE).expertParallel()).isFalse();
  }

  @Test
  void allToAllNeedsExpertParallelism() {
    assertThatThrownBy(() -> new ParallelConfig(2, 1, MoeA2aBackend.ALL_TO_ALL))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "--moe-a2a-backend all-to-all needs expert parallelism: set --ep-size to --tp-size"
                + " (2), or use --moe-a2a-backend none");
    assertThat(new ParallelConfig(2, 2, MoeA2aBackend.ALL_TO_ALL).a2a())
        .isEqualTo(MoeA2aBackend.ALL_TO_ALL);
    // One rank: every expert is local, the dispatch is a copy.
    assertThat(new ParallelConfig(1, 1, MoeA2aBackend.ALL_TO_ALL).expertParallel()).isFalse();
  }

  @Test
  void backendFlagValues() {
    assertThat(MoeA2aBackend.parse("all-to-all")).isEqualTo(MoeA2aBackend.ALL_TO_ALL);
    assertThat(MoeA2aBackend.parse("none")).isEqualTo(MoeA2aBackend.NONE);
    assertThatThrownBy(() -> MoeA2aBackend.parse("deepep"))
        .hasMessageContaining("--moe-a2a-backend must be none or all-to-all");
  }
}
