package dev.ringmaster.cuda.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.model.arch.ExpertPlacement;
import dev.ringmaster.model.arch.ParallelConfig;
import dev.ringmaster.model.arch.RankContext;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.ModelConfigParser;
import org.junit.jupiter.api.Test;

/**
 * What the GPU's tensor/expert-parallel layout decides without a GPU: which layouts it refuses and
 * why, and that a rank's experts and slices are the CPU's.
 */
class TensorParallelLayoutTest {
  private static ModelConfig fixture(String name) {
    return ModelConfigParser.parse(CudaCausalLmGpuTest.fixture(name));
  }

  private static RankShard shard(int rank, ParallelConfig p) {
    return new RankShard(new RankContext(rank, p, null), null);
  }

  @Test
  void indivisibleDimensionsAreNamedWithTheirFlag() {
    ModelConfig cfg = fixture("deepseek_v3_bf16"); // 8 heads, vocab 320, moe_intermediate 8
    assertThatThrownBy(() -> TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(3), 1, 8))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("num_attention_heads (8) is not divisible by --tp-size 3")
        .hasMessageContaining("moe_intermediate_size (8) is not divisible by --tp-size 3");
    ParallelConfig ep3 = new ParallelConfig(3, 3, ParallelConfig.MoeA2aBackend.NONE);
    assertThatThrownBy(() -> TensorParallelCudaLm.check(cfg, ep3, 1, 8))
        .hasMessageContaining("n_routed_experts (8) is not divisible by --ep-size 3");
  }

  @Test
  void tooFewGpusSaysHowManyAreNeededAndVisible() {
    ModelConfig cfg = fixture("deepseek_v3_bf16");
    assertThatThrownBy(() -> TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(4), 1, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("--tp-size 4 needs 4 GPUs, 1 visible");
    TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(4), 1, 4);
    // Over nodes, each node needs a GPU per rank it holds.
    assertThatThrownBy(() -> TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(4), 2, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("--tp-size 4 over 2 nodes needs 2 GPUs per node, 1 visible");
    TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(4), 2, 2);
    TensorParallelCudaLm.check(cfg, ParallelConfig.tensor(2), 2, 1);
  }

  @Test
  void unsupportedLayoutsAndModelsAreRefusedWithAReason() {
    ModelConfig mla = fixture("deepseek_v3_bf16");
    assertThatThrownBy(() -> TensorParallelCudaLm.check(mla, ParallelConfig.tensor(2), 4, 2))
        .hasMessageContaining("--tp-size 2 is not divisible by --nnodes 4");
    assertThatThrownBy(
            () ->
                TensorParallelCudaLm.check(
                    fixture("qwen3_moe_basic"), ParallelConfig.tensor(2), 1, 2))
        .hasMessageContaining("MLA models only");
  }

  @Test
  void allToAllRunsWithExpertParallelismOverEveryRank() {
    ModelConfig mla = fixture("deepseek_v3_bf16"); // 8 experts, shared intermediate 8
    ParallelConfig a2a = new ParallelConfig(2, 2, ParallelConfig.MoeA2aBackend.ALL_TO_ALL);
    TensorParallelCudaLm.check(mla, a2a, 1, 2);
    // The shared experts are replicated under all-to-all: their size need not divide.
    TensorParallelCudaLm.check(
        mla, new ParallelConfig(8, 8, ParallelConfig.MoeA2aBackend.ALL_TO_ALL), 1, 8);
    assertThatThrownBy(
            () ->
                TensorParallelCudaLm.check(
                    mla, new ParallelConfig(3, 3, ParallelConfig.MoeA2aBackend.ALL_TO_ALL), 1, 3))
        .hasMessageContaining("n_routed_experts (8) is not divisible by --ep-size 3");
    assertThatThrownBy(() -> TensorParallelCudaLm.check(mla, a2a, 1, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("--tp-size 2 needs 2 GPUs, 1 visible");
  }

  @Test
  void allToAllOwnersAreTheCpuPlacement() {
    ParallelConfig a2a = new ParallelConfig(4, 4, ParallelConfig.MoeA2aBackend.ALL_TO_ALL);
    ExpertPlacement cpu = a2a.placementFor(8);
    for (int r = 0; r < 4; r++) {
      RankShard s = shard(r, a2a);
      int[] owners = s.expertOwners(8);
      for (int e = 0; e < 8; e++) {
        assertThat(owners[e]).isEqualTo(cpu.owner(e));
      }
      assertThat(s.ownedExperts(8)).containsExactly(cpu.expertsOf(r));
      assertThat(s.expertInter(8)).isEqualTo(8);
      assertThat(s.allToAll()).as("no communicator: the plain model").isFalse();
    }
    // One rank: every expert is its own.
    RankShard one = shard(0, new ParallelConfig(1, 1, ParallelConfig.MoeA2aBackend.ALL_TO_ALL));
    assertThat(one.expertOwners(8)).containsOnly(0);
    assertThat(one.localIndexOf(8)).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
  }

  @Test
  void expertParallelRanksOwnTheCpuPlacementsExperts() {
    ParallelConfig ep = new ParallelConfig(4, 4, ParallelConfig.MoeA2aBackend.NONE);
    ExpertPlacement cpu = ep.placementFor(8);
    int[] seen = new int[8];
    for (int r = 0; r < 4; r++) {
      RankShard s = shard(r, ep);
      assertThat(s.ownedExperts(8)).containsExactly(cpu.expertsOf(r));
      assertThat(s.expertInter(8)).isEqualTo(8); // whole experts
      int[] local = s.localIndexOf(8);
      for (int e = 0; e < 8; e++) {
        if (cpu.owner(e) == r) {
          assertThat(local[e]).isEqualTo(cpu.localIndex(e));
          seen[e]++;
        } else {
          assertThat(local[e]).isEqualTo(-1);
        }
      }
    }
    assertThat(seen).containsOnly(1); // every expert computed by exactly one rank
  }

  @Test
  void tensorParallelRanksHoldEveryExpertsShareAndTheCpuSlices() {
    ParallelConfig tp = ParallelConfig.tensor(2);
    for (int r = 0; r < 2; r++) {
      RankShard s = shard(r, tp);
      RankContext cpu = new RankContext(r, tp, null);
      assertThat(s.ownedExperts(8)).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
      assertThat(s.localIndexOf(8)).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
      assertThat(s.expertInter(8)).isEqualTo(4);
      assertThat(s.start(320)).isEqualTo(cpu.start(320)).isEqualTo(160 * r);
      assertThat(s.share(8)).isEqualTo(cpu.share(8)).isEqualTo(4);
    }
    assertThat(RankShard.single().parallel()).isFalse();
    assertThat(RankShard.single().share(8)).isEqualTo(8);
  }
}
