package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The launch shapes of the DSA kernels, computed on the host (no GPU): score blocks sized to one
 * resident wave and never more than the positions need, top-k blocks per row by context, and the
 * multi-block top-k's state.
 */
class DsaLaunchShapesTest {
  @Test
  void scoreBlocksCoverOneWaveOrThePositions() {
    assertThat(DsaKernels.scoreBlocks(1, 202_752, 132)).isEqualTo(396);
    assertThat(DsaKernels.scoreBlocks(32, 202_752, 132)).isEqualTo(12);
    assertThat(DsaKernels.scoreBlocks(1, 100, 132)).isEqualTo(2);
    assertThat(DsaKernels.scoreBlocks(1000, 1 << 20, 132)).isEqualTo(1);
  }

  @Test
  void topKChunksGrowWithTheContextUpToTheLimit() {
    assertThat(DsaKernels.topKChunks(1)).isEqualTo(1);
    assertThat(DsaKernels.topKChunks(4096)).isEqualTo(1);
    assertThat(DsaKernels.topKChunks(4097)).isEqualTo(2);
    assertThat(DsaKernels.topKChunks(131_072)).isEqualTo(32);
    assertThat(DsaKernels.topKChunks(202_752)).isEqualTo(50);
    assertThat(DsaKernels.topKChunks(10_000_000)).isEqualTo(DsaKernels.TOPK_MAX_CHUNKS);
  }

  @Test
  void topKStateHoldsTheCandidateFormsHistogramCountsAndCandidatesPerRow() {
    // Per row: a 4,096-bin histogram, 8 control words, two counts per chunk, 16,384 candidates
    // (more than the six-pass form's four 256-bin histograms and counts).
    assertThat(DsaKernels.topKStateBytes(1, 1)).isEqualTo(4L * (4096 + 8 + 2 + 16384));
    assertThat(DsaKernels.topKStateBytes(32, 50)).isEqualTo(4L * 32 * (4096 + 8 + 100 + 16384));
  }

  @Test
  void indexerShapesTheKernelsCannotTakeAreRefused() {
    assertThatThrownBy(() -> DsaKernels.checkIndexerShape(32, 100))
        .hasMessageContaining("index_head_dim 100");
    assertThatThrownBy(() -> DsaKernels.checkIndexerShape(512, 128))
        .hasMessageContaining("--device cpu");
  }
}
