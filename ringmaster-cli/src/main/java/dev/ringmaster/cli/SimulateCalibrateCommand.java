package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.sim.calibrate.BenchCalibration;
import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.calibrate.Calibrator;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.calibrate.Measurements;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
import dev.ringmaster.sim.calibrate.OneBatchSteps;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.report.CheckText;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster simulate calibrate}: fits a profile's constants to this host's measurements
 * (JSON from {@code bench collectives} and {@code bench one-batch}; schema in {@link Measurements})
 * and writes the calibrated profile.
 */
@Command(
    name = "calibrate",
    mixinStandardHelpOptions = true,
    description =
        "Fit a hardware profile's efficiencies, overheads and collective alpha/beta to measurements"
            + " by least squares.")
final class SimulateCalibrateCommand implements Callable<Integer> {
  @Option(
      names = "--measurements",
      required = true,
      split = ",",
      description =
          "Measurement JSON files: bench collectives --json, bench one-batch --json or the native"
              + " measurement schema, detected per file.")
  List<Path> measurements;

  @Option(
      names = "--base-profile",
      required = true,
      description = "Profile to start from: built-in name or file.")
  String base;

  @Option(names = "--output", required = true, description = "Where to write the fitted profile.")
  Path output;

  @Option(
      names = "--model-config",
      description =
          "config.json (or model directory) of the model bench one-batch ran, where the path its"
              + " JSON names is not readable here.")
  Path modelConfig;

  @Option(names = "--name", description = "Name of the fitted profile (default: BASE-calibrated).")
  String name;

  @Option(
      names = "--report",
      description =
          "After fitting, print every measurement beside the fitted profile's prediction, its"
              + " error and the largest absolute error (as simulate check does).")
  boolean report;

  @Option(names = "--json", description = "Print the fit (and the report) as JSON.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    HardwareProfile profile = Profiles.load(base);
    List<MeasurementFile> files = readAll(measurements);
    Calibrator.Result r;
    try {
      r =
          BenchCalibration.calibrate(
              profile,
              files,
              run -> OneBatchSteps.model(run, modelConfig),
              name != null ? name : profile.name() + "-calibrated");
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    Profiles.save(r.profile(), output);
    CalibrationCheck check = report ? check(r.profile(), files, modelConfig) : null;
    if (json) {
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("profile", r.profile().name());
      out.put("output", output.toString());
      out.put("fitted", r.fitted());
      if (check != null) {
        out.put("check", CheckText.tree(check));
      }
      System.out.println(
          new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(out));
      return 0;
    }
    for (String line : r.fitted()) {
      System.out.println(line);
    }
    if (r.fitted().isEmpty()) {
      System.out.println("no constant had enough samples; the profile is unchanged");
    }
    System.out.println("profile written to " + output);
    if (check != null) {
      System.out.print(CheckText.text(check));
    }
    return 0;
  }

  /** Reads every measurement file, any accepted format. */
  static List<MeasurementFile> readAll(List<Path> paths) {
    List<MeasurementFile> files = new ArrayList<>();
    for (Path p : paths) {
      try {
        files.add(MeasurementsIo.readAny(p));
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
    }
    return files;
  }

  /** Predicted against measured for {@code files} on {@code profile}. */
  static CalibrationCheck check(HardwareProfile profile, List<MeasurementFile> files, Path model) {
    try {
      return CalibrationCheck.of(profile, files, run -> OneBatchSteps.model(run, model));
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new UserError(e.getMessage());
    }
  }
}
