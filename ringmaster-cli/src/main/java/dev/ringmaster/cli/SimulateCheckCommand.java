package dev.ringmaster.cli;

import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.report.CheckText;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ringmaster simulate check}: how well a profile (built-in or calibrated) predicts
 * measurements, without fitting anything.
 */
@Command(
    name = "check",
    mixinStandardHelpOptions = true,
    description =
        "Print every measurement beside the profile's prediction and the error, then the largest"
            + " absolute error.")
final class SimulateCheckCommand implements Callable<Integer> {
  @Option(
      names = "--measurements",
      required = true,
      split = ",",
      description =
          "Measurement JSON files: bench collectives --json, bench one-batch --json or the native"
              + " measurement schema, detected per file.")
  List<Path> measurements;

  @Option(
      names = "--hardware",
      required = true,
      description = "Profile to check: built-in name or file (e.g. a simulate calibrate output).")
  String hardware;

  @Option(
      names = "--model-config",
      description =
          "config.json (or model directory) of the model bench one-batch ran, where the path its"
              + " JSON names is not readable here.")
  Path modelConfig;

  @Option(names = "--json", description = "Print the check as JSON.")
  boolean json;

  @Override
  public Integer call() {
    HardwareProfile profile;
    try {
      profile = Profiles.load(hardware);
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    CalibrationCheck check =
        SimulateCalibrateCommand.check(
            profile, SimulateCalibrateCommand.readAll(measurements), modelConfig);
    System.out.print(json ? CheckText.json(check) + "\n" : CheckText.text(check));
    return 0;
  }
}
