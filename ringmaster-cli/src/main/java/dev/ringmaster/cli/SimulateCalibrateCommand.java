package dev.ringmaster.cli;

import dev.ringmaster.sim.calibrate.Calibrator;
import dev.ringmaster.sim.calibrate.Measurements;
import dev.ringmaster.sim.calibrate.MeasurementsIo;
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
      description = "Measurement JSON files (bench collectives / bench one-batch output).")
  List<Path> measurements;

  @Option(
      names = "--base-profile",
      required = true,
      description = "Profile to start from: built-in name or file.")
  String base;

  @Option(names = "--output", required = true, description = "Where to write the fitted profile.")
  Path output;

  @Option(names = "--name", description = "Name of the fitted profile (default: BASE-calibrated).")
  String name;

  @Override
  public Integer call() throws Exception {
    HardwareProfile profile = Profiles.load(base);
    List<Measurements.CollectiveSample> coll = new ArrayList<>();
    List<Measurements.KernelSample> kernels = new ArrayList<>();
    List<Measurements.StepSample> steps = new ArrayList<>();
    String host = null;
    String gpu = null;
    for (Path p : measurements) {
      Measurements m = MeasurementsIo.read(p);
      coll.addAll(m.collectives());
      kernels.addAll(m.kernels());
      steps.addAll(m.steps());
      host = host == null ? m.host() : host;
      gpu = gpu == null ? m.gpu() : gpu;
    }
    Measurements all = new Measurements(host, gpu, profile.gpuCount(), coll, kernels, steps);
    Calibrator.Result r =
        Calibrator.calibrate(profile, all, name != null ? name : profile.name() + "-calibrated");
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
