package dev.ringmaster.tools.tune;

import dev.ringmaster.tools.benchserve.BenchServeConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * One tune: what to serve, how to load it, the space and the limits.
 *
 * @param javaCommand the command that runs the {@code ringmaster} CLI in a fresh JVM (java, its
 *     options, class path and main class)
 * @param model the model directory every trial serves
 * @param fixedArgs {@code serve} flags every trial gets (e.g. {@code --device cuda})
 * @param space the grid
 * @param workload the {@code bench serve} dataset and load (the target is filled per trial)
 * @param startupTimeout how long a server may take to listen
 * @param runTimeout how long one benchmark run (one repeat) of a trial may take
 * @param out the folder of the evidence file, the report and the server logs
 * @param objective what the trials are ranked by
 * @param repeats benchmark runs per trial against its server, at least 1
 * @param oneBatch with {@code --mode one-batch}, the static batch each trial's {@code bench
 *     one-batch} child times (then {@code workload} is unused); null for {@code serve} trials
 */
public record TuneConfig(
    List<String> javaCommand,
    Path model,
    List<String> fixedArgs,
    TuneSpace space,
    Workload workload,
    Duration startupTimeout,
    Duration runTimeout,
    Path out,
    Objective objective,
    int repeats,
    OneBatchWorkload oneBatch) {

  /** Copies the lists and checks the repeats and that the objective fits the mode. */
  public TuneConfig {
    if (repeats < 1) {
      throw new IllegalArgumentException("--repeats must be at least 1, got " + repeats);
    }
    if ((oneBatch != null) != objective.kind().oneBatch()) {
      throw new IllegalArgumentException(
          oneBatch != null
              ? "--mode one-batch measures --objective decode or prefill, not "
                  + objective.kind().cliName()
              : "--objective "
                  + objective.kind().cliName()
                  + " is a bench one-batch figure: add --mode one-batch");
    }
    javaCommand = List.copyOf(javaCommand);
    fixedArgs = List.copyOf(fixedArgs);
  }

  /**
   * The {@code bench serve} side of a trial.
   *
   * @param dataset prompts
   * @param load arrivals and request options
   * @param warmupRuns untimed whole runs of the workload against each trial's server before its
   *     measured repeats, at least 0: a fresh server's first run under the real load is slower than
   *     the next (its JIT, heap and first-used kernels), which a few warm-up requests do not cover
   */
  public record Workload(
      BenchServeConfig.Dataset dataset, BenchServeConfig.Load load, int warmupRuns) {
    /** Checks the warm-up runs. */
    public Workload {
      if (warmupRuns < 0) {
        throw new IllegalArgumentException("--warmup-runs must be 0 or more, got " + warmupRuns);
      }
    }
  }

  /**
   * The {@code bench one-batch} side of a trial: one static batch, prefilled and decoded.
   *
   * @param batchSize sequences in the batch
   * @param inputLen prompt tokens per sequence
   * @param outputLen decode steps
   * @param warmupRounds untimed rounds before the timed one, at least 1
   * @param warmupDecodeSteps untimed decode steps per warm-up round
   */
  public record OneBatchWorkload(
      int batchSize, int inputLen, int outputLen, int warmupRounds, int warmupDecodeSteps) {
    /** Checks the sizes. */
    public OneBatchWorkload {
      if (batchSize < 1 || inputLen < 1 || outputLen < 1 || warmupRounds < 1) {
        throw new IllegalArgumentException(
            "--batch-size, the input and output lengths and --warmup-rounds must be at least 1");
      }
      if (warmupDecodeSteps < 0) {
        throw new IllegalArgumentException("--warmup-decode-steps must be at least 0");
      }
    }
  }

  /** Whether trials are {@code bench one-batch} children rather than servers. */
  public boolean isOneBatch() {
    return oneBatch != null;
  }

  /** The {@code bench one-batch} command line of {@code trial}. */
  public List<String> oneBatchCommand(Trial trial) {
    List<String> c = new java.util.ArrayList<>(javaCommand);
    c.addAll(
        List.of(
            "bench",
            "one-batch",
            "--model",
            model.toString(),
            "--json",
            "--batch-size",
            Integer.toString(oneBatch.batchSize()),
            "--input-len",
            Integer.toString(oneBatch.inputLen()),
            "--output-len",
            Integer.toString(oneBatch.outputLen()),
            "--warmup-rounds",
            Integer.toString(oneBatch.warmupRounds()),
            "--warmup-decode-steps",
            Integer.toString(oneBatch.warmupDecodeSteps())));
    c.addAll(fixedArgs);
    c.addAll(trial.args());
    return c;
  }

  /** The evidence file. */
  public Path evidence() {
    return out.resolve("evidence.jsonl");
  }

  /** The server command line of {@code trial}, port 0 (the server picks a free one). */
  public List<String> serverCommand(Trial trial) {
    List<String> c = new java.util.ArrayList<>(javaCommand);
    c.addAll(List.of("serve", "--model", model.toString(), "--port", "0"));
    c.addAll(fixedArgs);
    c.addAll(trial.args());
    return c;
  }

  /** The command that launches {@code trial}'s configuration by hand. */
  public String launchCommand(Trial trial) {
    List<String> c =
        new java.util.ArrayList<>(List.of("ringmaster", "serve", "--model", model.toString()));
    c.addAll(fixedArgs);
    c.addAll(trial.args());
    return String.join(" ", c);
  }
}
