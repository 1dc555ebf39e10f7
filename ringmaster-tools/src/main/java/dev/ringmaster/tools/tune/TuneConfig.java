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
    int repeats) {

  /** Copies the lists and checks the repeats. */
  public TuneConfig {
    if (repeats < 1) {
      throw new IllegalArgumentException("--repeats must be at least 1, got " + repeats);
    }
    javaCommand = List.copyOf(javaCommand);
    fixedArgs = List.copyOf(fixedArgs);
  }

  /**
   * The {@code bench serve} side of a trial.
   *
   * @param dataset prompts
   * @param load arrivals and request options
   */
  public record Workload(BenchServeConfig.Dataset dataset, BenchServeConfig.Load load) {}

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
