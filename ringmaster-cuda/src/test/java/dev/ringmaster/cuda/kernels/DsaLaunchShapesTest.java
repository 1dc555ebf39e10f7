package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The launch shapes of the DSA kernels, computed on the host (no GPU): score blocks sized to one
 * resident wave and never more than the positions need, the streaming score kernels' shared memory,
 * top-k blocks per row by context, and the multi-block top-k's state.
 */
class DsaLaunchShapesTest {
  @Test
  void scoreBlocksCoverOneWaveOrThePositions() {
    // One streaming block per SM, rounded down per row (no trailing second wave).
    assertThat(DsaLaunchShapes.scoreBlocks(1, 202_752, 132)).isEqualTo(132);
    assertThat(DsaLaunchShapes.scoreBlocks(32, 202_752, 132)).isEqualTo(4);
    assertThat(DsaLaunchShapes.scoreBlocks(5, 202_752, 132)).isEqualTo(26);
    // A block covers 8 warps x 32 positions per step: 100 positions need one.
    assertThat(DsaLaunchShapes.scoreBlocks(1, 100, 132)).isEqualTo(1);
    assertThat(DsaLaunchShapes.scoreBlocks(1, 4096, 132)).isEqualTo(16);
    assertThat(DsaLaunchShapes.scoreBlocks(1000, 1 << 20, 132)).isEqualTo(1);
    // The tiled reference kernels: three blocks per SM, 64-position tiles.
    assertThat(DsaLaunchShapes.tiledScoreBlocks(1, 202_752, 132)).isEqualTo(396);
    assertThat(DsaLaunchShapes.tiledScoreBlocks(32, 202_752, 132)).isEqualTo(12);
    assertThat(DsaLaunchShapes.tiledScoreBlocks(1, 100, 132)).isEqualTo(2);
  }

  @Test
  void streamingScoreBlocksFitAnH200sSharedMemory() {
    int h200 = 227 * 1024; // the most dynamic shared memory a block may opt into on sm_90
    // GLM-5 (32 heads x 128): the query's hi and lo parts (2 x 32 x 136 x 2 bytes), 32 weights,
    // 8 warps x 3 stages of 32 key rows x 136 bf16.
    assertThat(DsaLaunchShapes.scoreMmaSharedBytes(32, 128, 8))
        .isEqualTo(2 * 8704 + 128 + 8 * 3 * 8704)
        .isLessThanOrEqualTo(h200);
    // DeepSeek-V3.2 (64 heads x 128): 7 warps fit, 8 do not.
    assertThat(DsaLaunchShapes.scoreMmaSharedBytes(64, 128, 7)).isLessThanOrEqualTo(h200);
    assertThat(DsaLaunchShapes.scoreMmaSharedBytes(64, 128, 8)).isGreaterThan(h200);
    // A stage is the larger of the key tile and the f32 dots that overlay it: 16 dims, 16 heads.
    assertThat(DsaLaunchShapes.scoreMmaSharedBytes(16, 16, 1))
        .isEqualTo(2 * 768 + 128 + 3 * Math.max(32 * 24 * 2, 32 * 20 * 4));
    // FP8: the query codes, 4 raw stages (4 KiB codes + 128 bytes of scales) and a work tile.
    assertThat(DsaLaunchShapes.scoreFp8MmaSharedBytes(32, 128, 8))
        .isEqualTo(8704 + 128 + 8 * (4 * (4096 + 128) + 8704))
        .isLessThanOrEqualTo(h200);
    assertThat(DsaLaunchShapes.scoreFp8MmaSharedBytes(64, 128, 8)).isLessThanOrEqualTo(h200);
    // The bulk-copy kernel: the same layout and 8 warps x 3 mbarriers of 8 bytes after it.
    assertThat(DsaLaunchShapes.scoreBulkSharedBytes(32, 128, 8))
        .isEqualTo(2 * 8704 + 128 + 8 * 3 * 8704 + 8 * 3 * 8)
        .isLessThanOrEqualTo(h200);
  }

  @Test
  void topKChunksGrowWithTheContextUpToTheLimit() {
    assertThat(DsaLaunchShapes.topKChunks(1)).isEqualTo(1);
    assertThat(DsaLaunchShapes.topKChunks(4096)).isEqualTo(1);
    assertThat(DsaLaunchShapes.topKChunks(4097)).isEqualTo(2);
    assertThat(DsaLaunchShapes.topKChunks(131_072)).isEqualTo(32);
    assertThat(DsaLaunchShapes.topKChunks(202_752)).isEqualTo(50);
    assertThat(DsaLaunchShapes.topKChunks(10_000_000)).isEqualTo(DsaLaunchShapes.TOPK_MAX_CHUNKS);
  }

  @Test
  void topKChunksFallWithTheRowsToOneBlockAnSm() {
    assertThat(DsaLaunchShapes.topKChunks(131_072, 1, 132)).isEqualTo(32);
    assertThat(DsaLaunchShapes.topKChunks(202_752, 8, 132)).isEqualTo(16);
    assertThat(DsaLaunchShapes.topKChunks(202_752, 32, 132)).isEqualTo(4);
    assertThat(DsaLaunchShapes.topKChunks(202_752, 1024, 132)).isEqualTo(2);
    assertThat(DsaLaunchShapes.topKChunks(4096, 1024, 132)).isEqualTo(1);
  }

  @Test
  void topKStateHoldsTheCandidateFormsHistogramCountsAndCandidatesPerRow() {
    // Per row: a 4,096-bin histogram, 8 control words, two counts per chunk, 16,384 candidates
    // (more than the six-pass form's four 256-bin histograms and counts).
    assertThat(DsaLaunchShapes.topKStateBytes(1, 1)).isEqualTo(4L * (4096 + 8 + 2 + 16384));
    assertThat(DsaLaunchShapes.topKStateBytes(32, 50))
        .isEqualTo(4L * 32 * (4096 + 8 + 100 + 16384));
  }

  @Test
  void candidateCountIsTheThirdControlWordOfEachRowsHead() {
    // Row r's head starts at r * (4,096 + 8 + 2 * chunks); its control words follow the histogram
    // (tickets of passes 0 and 1, then the count), before every row's candidate lists.
    assertThat(DsaLaunchShapes.topKCandidateCountIndex(0, 4)).isEqualTo(4096 + 2);
    assertThat(DsaLaunchShapes.topKCandidateCountIndex(1, 4)).isEqualTo(4104 + 8 + 4096 + 2);
    assertThat(DsaLaunchShapes.topKCandidateCountIndex(31, 50))
        .isEqualTo(31L * (4104 + 100) + 4098);
    assertThat(DsaLaunchShapes.topKCandidateCountIndex(31, 50) * 4)
        .isLessThan(DsaLaunchShapes.topKStateBytes(32, 50));
    assertThat(DsaLaunchShapes.topKCandidateCapacity()).isEqualTo(16384);
  }

  @Test
  void indexerShapesTheKernelsCannotTakeAreRefused() {
    assertThatThrownBy(() -> DsaKernels.checkIndexerShape(32, 100))
        .hasMessageContaining("index_head_dim 100");
    assertThatThrownBy(() -> DsaKernels.checkIndexerShape(512, 128))
        .hasMessageContaining("--device cpu");
  }
}
