package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
import dev.ringmaster.sim.calibrate.OneBatchSteps;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.model.ModelShape;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;

/**
 * Options {@code simulate calibrate} and {@code simulate check} share: the measurement files, the
 * model a one-batch run loaded, JSON output and the history file; and what both do with them.
 */
final class MeasurementOptions {
  @Option(
      names = "--measurements",
      required = true,
      split = ",",
      description =
          "Measurement JSON files: bench collectives --json, bench one-batch --json or the native"
              + " measurement schema, detected per file.")
  List<Path> measurements;

  @Option(
      names = "--model-config",
      description =
          "config.json (or model directory) of the model bench one-batch ran, where the path its"
              + " JSON names is not readable here.")
  Path modelConfig;

  @Option(names = "--json", description = "Print the result as JSON.")
  boolean json;

  @Option(
      names = "--history",
      description =
          "Append the predicted-against-measured rows to this history file (JSONL), with the"
              + " command and the measurement files as the reference.")
  Path history;

  /** A built-in profile or profile file; a bad name is the user's error. */
  static HardwareProfile profile(String nameOrFile) {
    try {
      return Profiles.load(nameOrFile);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** The command line as typed, for the history record. */
  static String commandLine(CommandSpec spec) {
    ParseResult parsed = spec.root().commandLine().getParseResult();
    List<String> args = parsed != null ? parsed.originalArgs() : List.of();
    return "ringmaster " + String.join(" ", args);
  }

  /** Every measurement file, any accepted format. */
  List<MeasurementFile> read() {
    List<MeasurementFile> files = new ArrayList<>();
    for (Path p : measurements) {
      try {
        files.add(MeasurementsIo.readAny(p));
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
    }
    return files;
  }

  /** The model a one-batch run loaded: {@code --model-config}, else the path its JSON names. */
  ModelShape model(MeasurementFile.OneBatch run) {
    return OneBatchSteps.model(run, modelConfig);
  }

  /** Predicted against measured for {@code files} on {@code profile}. */
  CalibrationCheck check(HardwareProfile profile, List<MeasurementFile> files) {
    try {
      return CalibrationCheck.of(profile, files, this::model);
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new UserError(e.getMessage());
    }
  }

  /** Appends {@code results} to {@code --history} where given. */
  void record(String benchmark, String command, JsonNode results) throws IOException {
    if (history == null) {
      return;
    }
    String files = measurements.stream().map(Path::toString).collect(Collectors.joining(", "));
    BenchmarkHistory.append(
        history,
        benchmark,
        command,
        results,
        "measured: the benchmark output in " + files + "; predicted: the simulator on the profile");
  }
}
