package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.report.CheckText;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

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
  @Spec CommandSpec spec;

  @Mixin MeasurementOptions in = new MeasurementOptions();

  @Option(
      names = "--hardware",
      required = true,
      description = "Profile to check: built-in name or file (e.g. a simulate calibrate output).")
  String hardware;

  @Override
  public Integer call() throws Exception {
    CalibrationCheck check = in.check(MeasurementOptions.profile(hardware), in.read());
    System.out.print(in.json ? CheckText.json(check) + "\n" : CheckText.text(check));
    in.record(
        "simulate-check",
        MeasurementOptions.commandLine(spec),
        new ObjectMapper().valueToTree(CheckText.tree(check)));
    return 0;
  }
}
