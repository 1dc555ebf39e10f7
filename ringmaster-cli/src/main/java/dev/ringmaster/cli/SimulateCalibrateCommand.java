package dev.ringmaster.cli;

import dev.ringmaster.sim.calibrate.BenchCalibration;
import dev.ringmaster.sim.calibrate.Calibrator;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.calibrate.Measurements;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
import dev.ringmaster.sim.calibrate.OneBatchSteps;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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

  @Override
  public Integer call() throws Exception {
    HardwareProfile profile = Profiles.load(base);
    List<MeasurementFile> files = new ArrayList<>();
    for (Path p : measurements) {
      try {
        files.add(MeasurementsIo.readAny(p));
      } catch (IllegalArgumentException e) {
        throw new UserError(e.getMessage());
      }
    }
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
    for (String line : r.fitted()) {
      System.out.println(line);
    }
    if (r.fitted().isEmpty()) {
      System.out.println("no constant had enough samples; the profile is unchanged");
    }
    Profiles.save(r.profile(), output);
    System.out.println("profile written to " + output);
    return 0;
  }
}
