package dev.ringmaster.sim.calibrate;

import dev.ringmaster.engine.bench.OneBatchBenchmark;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import java.util.List;
import java.util.Map;

/**
 * One measurement file as read, in whichever of the three formats {@link MeasurementsIo#readAny}
 * recognises. One-batch runs stay raw here because turning them into step samples needs a model and
 * a profile ({@link OneBatchSteps}).
 */
public sealed interface MeasurementFile {

  /**
   * The native schema.
   *
   * @param measurements the samples
   */
  record Native(Measurements measurements) implements MeasurementFile {}

  /**
   * {@code bench collectives --json}: a JSON array of results.
   *
   * @param results the points as the benchmark printed them
   */
  record Collectives(List<BenchmarkResult> results) implements MeasurementFile {
    /** Copies the list. */
    public Collectives {
      results = List.copyOf(results);
    }
  }

  /**
   * {@code bench one-batch --json}: one object per run (snake_case).
   *
   * @param model the model directory the run loaded (or a description of it)
   * @param device cpu or cuda
   * @param tpSize tensor-parallel size
   * @param epSize expert-parallel size
   * @param memoryPlan the GPU memory plan (cuda only; its {@code cuda_graph_mb_per_bs} names the
   *     batch sizes that replayed a CUDA graph), or null
   * @param results one entry per batch size
   * @param allreduce the {@code --allreduce} choice of the run, or null where the file predates it
   * @param moeA2aBackend the {@code --moe-a2a-backend} of a run with expert parallelism ({@code
   *     none} or {@code all-to-all}), or null (no EP, or a file that predates the field)
   */
  record OneBatch(
      String model,
      String device,
      int tpSize,
      int epSize,
      Map<String, Object> memoryPlan,
      List<OneBatchBenchmark.Result> results,
      String allreduce,
      String moeA2aBackend)
      implements MeasurementFile {
    /** Lists default to empty; sizes to 1. */
    public OneBatch {
      results = results == null ? List.of() : List.copyOf(results);
      tpSize = Math.max(1, tpSize);
      epSize = Math.max(1, epSize);
    }

    /** A run whose allreduce choice is not recorded. */
    public OneBatch(
        String model,
        String device,
        int tpSize,
        int epSize,
        Map<String, Object> memoryPlan,
        List<OneBatchBenchmark.Result> results) {
      this(model, device, tpSize, epSize, memoryPlan, results, null, null);
    }
  }
}
