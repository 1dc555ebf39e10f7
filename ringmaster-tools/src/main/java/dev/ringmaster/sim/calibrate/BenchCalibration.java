package dev.ringmaster.sim.calibrate;

import dev.ringmaster.sim.calibrate.Measurements.CollectiveSample;
import dev.ringmaster.sim.calibrate.Measurements.KernelSample;
import dev.ringmaster.sim.calibrate.Measurements.StepSample;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.model.ModelShape;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Calibrates from files in any accepted format. One-batch step samples need GPU busy times
 * predicted under the fitted kernel and collective constants, so calibration runs twice: first
 * without them, then with them predicted under the first result.
 */
public final class BenchCalibration {
  private BenchCalibration() {}

  /**
   * Fits {@code base} to {@code files}.
   *
   * @param models the model each one-batch run loaded
   * @param newName name of the fitted profile
   */
  public static Calibrator.Result calibrate(
      HardwareProfile base,
      List<MeasurementFile> files,
      Function<MeasurementFile.OneBatch, ModelShape> models,
      String newName) {
    List<CollectiveSample> coll = new ArrayList<>();
    List<KernelSample> kernels = new ArrayList<>();
    List<StepSample> steps = new ArrayList<>();
    List<MeasurementFile.OneBatch> runs = new ArrayList<>();
    String host = null;
    String gpu = null;
    for (MeasurementFile f : files) {
      switch (f) {
        case MeasurementFile.Native n -> {
          coll.addAll(n.measurements().collectives());
          kernels.addAll(n.measurements().kernels());
          steps.addAll(n.measurements().steps());
          host = host == null ? n.measurements().host() : host;
          gpu = gpu == null ? n.measurements().gpu() : gpu;
        }
        case MeasurementFile.Collectives c -> coll.addAll(BenchCollectives.samples(c.results()));
        case MeasurementFile.OneBatch o -> {
          runs.add(o);
          kernels.addAll(OneBatchKernels.samples(o, models.apply(o), base));
          if (gpu == null && o.memoryPlan() != null && o.memoryPlan().get("gpu") != null) {
            gpu = String.valueOf(o.memoryPlan().get("gpu"));
          }
        }
      }
    }
    Measurements first = new Measurements(host, gpu, base.gpuCount(), coll, kernels, steps);
    Calibrator.Result r = Calibrator.calibrate(base, first, newName);
    if (runs.isEmpty()) {
      return r;
    }
    List<StepSample> all = new ArrayList<>(steps);
    for (MeasurementFile.OneBatch run : runs) {
      all.addAll(OneBatchSteps.samples(run, models.apply(run), r.profile()));
    }
    return Calibrator.calibrate(
        base, new Measurements(host, gpu, base.gpuCount(), coll, kernels, all), newName);
  }
}
