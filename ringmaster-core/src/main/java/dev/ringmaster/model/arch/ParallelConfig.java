package dev.ringmaster.model.arch;

/**
 * How a model is spread over ranks: tensor parallelism for attention, dense MLPs, embedding and LM
 * head; for MoE layers either tensor parallelism (each expert's intermediate dimension split) or
 * expert parallelism (each rank owns a contiguous range of experts). As in SGLang, the expert
 * parallel group is the tensor parallel group: {@code epSize} is 1 or equal to {@code tpSize}.
 *
 * @param tpSize tensor-parallel degree (ranks)
 * @param epSize expert-parallel degree (1 = experts split by intermediate dimension instead)
 * @param a2a how tokens reach the ranks owning their experts under expert parallelism
 * @param placement which rank owns which expert under expert parallelism; null for contiguous
 *     ranges
 */
public record ParallelConfig(int tpSize, int epSize, MoeA2aBackend a2a, ExpertPlacement placement) {

  /** A layout with contiguous expert ranges. */
  public ParallelConfig(int tpSize, int epSize, MoeA2aBackend a2a) {
    this(tpSize, epSize, a2a, null);
  }

  /** Checks degrees, and that all-to-all dispatch comes with expert parallelism. */
  public ParallelConfig {
    if (tpSize < 1) {
      throw new IllegalArgumentException("--tp-size must be at least 1, got " + tpSize);
    }
    if (epSize != 1 && epSize != tpSize) {
      throw new IllegalArgumentException(
          "--ep-size must be 1 or equal to --tp-size (the expert-parallel group is the"
              + " tensor-parallel group), got ep "
              + epSize
              + " with tp "
              + tpSize);
    }
    if (a2a == MoeA2aBackend.ALL_TO_ALL && tpSize > 1 && epSize == 1) {
      // Tokens travel to the rank that owns their expert: without expert parallelism none does.
      throw new IllegalArgumentException(
          "--moe-a2a-backend all-to-all needs expert parallelism: set --ep-size to --tp-size ("
              + tpSize
              + "), or use --moe-a2a-backend none");
    }
  }

  /** No parallelism. */
  public static ParallelConfig single() {
    return new ParallelConfig(1, 1, MoeA2aBackend.NONE);
  }

  /** Tensor parallelism of degree {@code tp}. */
  public static ParallelConfig tensor(int tp) {
    return new ParallelConfig(tp, 1, MoeA2aBackend.NONE);
  }

  /** The placement of {@code experts} routed experts over the EP ranks. */
  public ExpertPlacement placementFor(int experts) {
    if (placement == null) {
      return ExpertPlacement.contiguous(experts, epSize);
    }
    if (placement.experts() != experts) {
      throw new IllegalArgumentException(
          "expert placement covers "
              + placement.experts()
              + " experts but the model has "
              + experts);
    }
    return placement;
  }

  /** Whether experts are distributed by expert (not by intermediate dimension). */
  public boolean expertParallel() {
    return epSize > 1;
  }

  /** Token dispatch backend for expert parallelism ({@code --moe-a2a-backend}). */
  public enum MoeA2aBackend {
    /** every rank keeps every token, computes its own experts, and the output is allreduced. */
    NONE,
    /** tokens are sent to the ranks owning their experts and the results sent back. */
    ALL_TO_ALL;

    /** The flag value, as {@link #parse} reads it. */
    public String cliName() {
      return this == ALL_TO_ALL ? "all-to-all" : "none";
    }

    /** Parses the flag value {@code none} or {@code all-to-all}. */
    public static MoeA2aBackend parse(String s) {
      return switch (s) {
        case "none" -> NONE;
        case "all-to-all", "alltoall", "a2a" -> ALL_TO_ALL;
        default ->
            throw new IllegalArgumentException(
                "--moe-a2a-backend must be none or all-to-all, got '" + s + "'");
      };
    }
  }
}
