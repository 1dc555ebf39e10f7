package dev.ringmaster.tools.doctor;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.AttentionKind;
import dev.ringmaster.sim.model.KvLayout;
import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import dev.ringmaster.sim.model.QuantScheme;
import dev.ringmaster.sim.model.WeightInventory;
import dev.ringmaster.sim.serve.A2aBackend;
import dev.ringmaster.sim.serve.MemoryPlan;
import dev.ringmaster.sim.serve.MemoryPlanner;
import dev.ringmaster.sim.serve.ServingConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What a model needs on one rank, from its {@code config.json} through the simulator's memory
 * planner (the engine's own rules: bf16 weights on the GPU, graph pools per captured size,
 * all-to-all blocks for a full prefill chunk), and its weight files' size for the CPU.
 *
 * @param model the model directory
 * @param modelType {@code model_type}
 * @param mla whether attention is MLA (the CUDA backend runs only MLA models)
 * @param sparseAttention whether the model has a DSA indexer (sparse attention)
 * @param parameters parameter count
 * @param contextLength KV length of one sequence checked
 * @param gpuWeightsBytes one rank's weights as the GPU stores them (bf16)
 * @param gpuActivationsBytes the prefill workspace for the chunk
 * @param gpuGraphBytes memory the captured CUDA graphs hold
 * @param gpuGraphCount graphs captured
 * @param a2aBytes all-to-all buffers (0 without {@code --moe-a2a-backend all-to-all})
 * @param gpuKvBytesPerToken KV bytes of one token on one rank (bf16)
 * @param cpuWeightFileBytes the safetensors files (memory-mapped by the CPU engine)
 * @param cpuKvBytesPerToken KV bytes of one token on the CPU (f32, on the Java heap)
 */
public record ModelNeeds(
    String model,
    String modelType,
    boolean mla,
    boolean sparseAttention,
    long parameters,
    int contextLength,
    double gpuWeightsBytes,
    double gpuActivationsBytes,
    double gpuGraphBytes,
    int gpuGraphCount,
    double a2aBytes,
    double gpuKvBytesPerToken,
    long cpuWeightFileBytes,
    double cpuKvBytesPerToken) {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** GPU bytes of the weights, buffers and one sequence's KV at the context length. */
  public double gpuBytes() {
    return gpuWeightsBytes
        + gpuActivationsBytes
        + gpuGraphBytes
        + a2aBytes
        + gpuKvBytesPerToken * contextLength;
  }

  /**
   * The needs of the model in {@code dir} under {@code target}.
   *
   * @throws IllegalArgumentException when config.json is missing or describes no model the planner
   *     knows
   */
  public static ModelNeeds of(Path dir, DoctorTarget target) {
    ModelShape s = ModelShapes.load(dir);
    int context = target.contextLength() > 0 ? target.contextLength() : configContext(dir);
    boolean a2a = target.allToAll() && target.epSize() > 1;
    ServingConfig cfg =
        new ServingConfig(
            target.tpSize(),
            target.epSize(),
            a2a ? A2aBackend.ALL_TO_ALL : A2aBackend.NONE,
            AllreduceAlgorithm.NCCL,
            QuantScheme.preset("bf16"),
            "bf16",
            1,
            context,
            target.cudaGraphMaxBs() > 0,
            Math.max(1, target.cudaGraphMaxBs()),
            target.chunkedPrefillSize(),
            null);
    // The plan's weights and buffers do not depend on the profile; its KV figure (which does) is
    // not used: doctor sets the needs against the probed GPU itself.
    MemoryPlan plan = MemoryPlanner.plan(new WeightInventory(s), cfg, Profiles.load("h200"));
    return new ModelNeeds(
        dir.toString(),
        s.modelType(),
        s.attention().kind() == AttentionKind.MLA,
        s.indexer() != null,
        new WeightInventory(s).totalParameters(),
        context,
        plan.weightsBytes(),
        plan.activationsBytes(),
        plan.cudaGraphBytes(),
        plan.cudaGraphCount(),
        plan.a2aBufferBytes(),
        plan.kvBytesPerToken(),
        weightFileBytes(dir),
        2 * KvLayout.bytesPerTokenPerRank(s, "bf16", 1));
  }

  private static int configContext(Path dir) {
    try {
      JsonNode c = JSON.readTree(dir.resolve("config.json").toFile());
      return Math.max(1, c.path("max_position_embeddings").asInt(4096));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + dir.resolve("config.json"), e);
    }
  }

  private static long weightFileBytes(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .filter(p -> p.getFileName().toString().endsWith(".safetensors"))
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  return 0;
                }
              })
          .sum();
    } catch (IOException e) {
      return 0;
    }
  }
}
