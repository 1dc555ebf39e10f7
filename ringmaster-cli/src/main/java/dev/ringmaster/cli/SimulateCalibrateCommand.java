package dev.ringmaster.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.sim.calibrate.BenchCalibration;
import dev.ringmaster.sim.calibrate.CalibrationCheck;
import dev.ringmaster.sim.calibrate.Calibrator;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.calibrate.Measurements;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.sim.report.CheckText;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

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
  @Spec CommandSpec spec;

  @Mixin MeasurementOptions in = new MeasurementOptions();

  @Option(
      names = "--base-profile",
      required = true,
      description = "Profile to start from: built-in name or file.")
  String base;

  @Option(names = "--output", required = true, description = "Where to write the fitted profile.")
  Path output;

  @Option(names = "--name", description = "Name of the fitted profile (default: BASE-calibrated).")
  String name;

  @Option(
      names = "--report",
      description =
          "After fitting, print every measurement beside the fitted profile's prediction, its"
              + " error and the largest absolute error (as simulate check does).")
  boolean report;

  @Override
  public Integer call() throws Exception {
    HardwareProfile profile = MeasurementOptions.profile(base);
    List<MeasurementFile> files = in.read();
    Calibrator.Result r;
    try {
      r =
          BenchCalibration.calibrate(
              profile, files, in::model, name != null ? name : profile.name() + "-calibrated");
    } catch (IllegalArgumentException e) {
      throw new UserError(e.getMessage());
    }
    Profiles.save(r.profile(), output);
    // the history record is the report, so --history implies it
    CalibrationCheck check = report || in.history != null ? in.check(r.profile(), files) : null;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("profile", r.profile().name());
    out.put("output", output.toString());
    out.put("fitted", r.fitted());
    if (check != null) {
      out.put("check", CheckText.tree(check));
    }
    ObjectMapper m = new ObjectMapper();
    in.record("simulate-calibrate", MeasurementOptions.commandLine(spec), m.valueToTree(out));
    if (in.json) {
      System.out.println(m.enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(out));
      return 0;
    }
    for (String line : r.fitted()) {
      System.out.println(line);
    }
    if (r.fitted().isEmpty()) {
      System.out.println("no constant had enough samples; the profile is unchanged");
    }
    System.out.println("profile written to " + output);
    if (check != null && report) {
      System.out.print(CheckText.text(check));
    }
    return 0;
  }
}
