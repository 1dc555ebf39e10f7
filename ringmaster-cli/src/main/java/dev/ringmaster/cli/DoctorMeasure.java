package dev.ringmaster.cli;

import dev.ringmaster.cuda.bench.DeviceCollectiveBench;
import dev.ringmaster.cuda.collective.AllReduceTableCache;
import dev.ringmaster.cuda.collective.AllReduceTuner;
import dev.ringmaster.cuda.collective.DeviceWorld;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.nccl.DistInit;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.CollectiveOp;
import dev.ringmaster.parallel.bench.BenchmarkOptions;
import dev.ringmaster.parallel.bench.BenchmarkResult;
import dev.ringmaster.parallel.bench.CollectiveBenchmark;
import dev.ringmaster.sim.calibrate.BenchCalibration;
import dev.ringmaster.sim.calibrate.Calibrator;
import dev.ringmaster.sim.calibrate.MeasurementFile;
import dev.ringmaster.sim.hw.HardwareProfile;
import dev.ringmaster.sim.hw.Profiles;
import dev.ringmaster.tools.doctor.GpuFacts;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code doctor --measure}: short micro-benchmarks of this host, saved where the engine and the
 * simulator read them. Copy bandwidth (host memory; device memory per GPU) and the driver's cost of
 * one tiny operation are printed; the allreduce is measured per algorithm and message size
 * (in-process CPU ranks, or NCCL and the peer kernels over every GPU), the GPU table goes to the
 * cache {@code --allreduce auto} reads ({@link AllReduceTableCache}), and the points are fitted
 * into a simulator hardware profile ({@code simulate --hardware FILE}) written to {@code profile}.
 */
final class DoctorMeasure {
  private static final long HOST_COPY_BYTES = 64L << 20;
  private static final long DEVICE_COPY_BYTES = 256L << 20;

  private DoctorMeasure() {}

  /** Runs the benchmarks; returns one line per result and where it was written. */
  static List<String> run(GpuFacts gpu, Path profile, String baseProfile, PrintStream log)
      throws IOException {
    List<String> out = new ArrayList<>();
    out.add(
        String.format(
            Locale.ROOT, "host copy bandwidth %.1f GB/s (read + written)", hostCopyGbs()));
    List<BenchmarkResult> points;
    String base;
    if (!gpu.available()) {
      log.println("doctor: measuring allreduce on 2 in-process CPU ranks");
      points = CollectiveBenchmark.run(cpuOptions());
      base = baseProfile != null ? baseProfile : "cpu-host";
      out.add("allreduce: " + points.size() + " points on 2 in-process CPU ranks");
    } else {
      for (GpuFacts.Gpu g : gpu.gpus()) {
        out.add(String.format(Locale.ROOT, "GPU%d %s", g.index(), deviceCopyAndLaunch(g.index())));
      }
      base = baseProfile != null ? baseProfile : baseFor(gpu.gpus());
      if (baseProfile == null) {
        baseNote(gpu.gpus()).ifPresent(out::add);
      }
      int n = gpu.gpus().size();
      if (n < 2) {
        out.add("allreduce: one GPU, nothing to measure");
        points = List.of();
      } else {
        points = gpuAllReduce(n, log, out);
      }
    }
    if (points.isEmpty()) {
      return out;
    }
    HardwareProfile p = Profiles.load(base);
    Calibrator.Result r =
        BenchCalibration.calibrate(
            p, List.of(new MeasurementFile.Collectives(points)), run -> null, base + "-this-host");
    Profiles.save(r.profile(), profile);
    out.add(
        "host profile (simulate --hardware "
            + profile
            + "): "
            + r.fitted().size()
            + " constants fitted from "
            + base);
    return out;
  }

  /**
   * The built-in profile whose unmeasured constants (compute rates, memory bandwidth, the PCIe
   * tree) best describe these GPUs: by GPU family, the eight-GPU box where there are several.
   */
  static String baseFor(List<GpuFacts.Gpu> gpus) {
    boolean several = gpus.size() > 1;
    return family(gpus.getFirst().name(), several).orElse(several ? "h200-x8" : "h200");
  }

  /** The built-in profile of this GPU's family, if the project has one. */
  private static java.util.Optional<String> family(String gpuName, boolean several) {
    String name = gpuName.toUpperCase(Locale.ROOT);
    if (name.contains("H200")) {
      return java.util.Optional.of(several ? "h200-x8" : "h200");
    }
    if (name.contains("H100")) {
      return java.util.Optional.of("h100-sxm-x8");
    }
    if (name.contains("RTX PRO 6000")) {
      return java.util.Optional.of("rtx-pro-6000-x8");
    }
    return java.util.Optional.empty();
  }

  /**
   * What the base profile {@link #baseFor} picks lends that does not match this host, if anything.
   */
  static java.util.Optional<String> baseNote(List<GpuFacts.Gpu> gpus) {
    String base = baseFor(gpus);
    HardwareProfile p = Profiles.load(base);
    String gpu = gpus.getFirst().name();
    List<String> notes = new ArrayList<>();
    if (family(gpu, gpus.size() > 1).isEmpty()) {
      notes.add(
          "no built-in profile for " + gpu + ": its compute and memory figures are " + base + "'s");
    }
    if (p.gpuCount() != gpus.size()) {
      notes.add(
          "its GPU count ("
              + p.gpuCount()
              + ") and PCIe/NVLink tree are "
              + base
              + "'s, this host has "
              + gpus.size());
    }
    return notes.isEmpty()
        ? java.util.Optional.empty()
        : java.util.Optional.of(
            "base profile "
                + base
                + ": "
                + String.join("; ", notes)
                + " (--base-profile FILE gives a closer one)");
  }

  private static BenchmarkOptions cpuOptions() {
    return new BenchmarkOptions(
        2,
        CollectiveOp.ALL_REDUCE,
        List.of(
            AllReduceAlgorithm.RING,
            AllReduceAlgorithm.ONESHOT,
            AllReduceAlgorithm.TWOSHOT,
            AllReduceAlgorithm.RECURSIVE_DOUBLING),
        1 << 10,
        1 << 20,
        3,
        10,
        BenchmarkOptions.defaults(2, CollectiveOp.ALL_REDUCE).chunkElements(),
        1);
  }

  private static List<BenchmarkResult> gpuAllReduce(int n, PrintStream log, List<String> out) {
    DeviceWorld.Options wo =
        new DeviceWorld.Options(
            n,
            DistInit.singleNode(),
            AllReduceAlgorithm.AUTO,
            false,
            8 << 20,
            Duration.ofSeconds(60),
            true);
    try (DeviceWorld world = DeviceWorld.create(wo)) {
      AllReduceTableCache cache = AllReduceTableCache.standard();
      var table = AllReduceTuner.tuneOrLoad(world, cache, log);
      out.add("allreduce auto table for " + n + " GPUs (" + cache.file(n) + "): " + table);
      BenchmarkOptions o =
          new BenchmarkOptions(
              n,
              CollectiveOp.ALL_REDUCE,
              DeviceCollectiveBench.defaultAlgorithms().stream()
                  .filter(a -> a != AllReduceAlgorithm.AUTO)
                  .toList(),
              1 << 10,
              8 << 20,
              5,
              20,
              BenchmarkOptions.defaults(n, CollectiveOp.ALL_REDUCE).chunkElements(),
              1);
      List<BenchmarkResult> r = DeviceCollectiveBench.run(world, o, true);
      out.add("allreduce: " + r.size() + " points on " + n + " GPUs (graph replays)");
      return r;
    }
  }

  /** Host memory copy rate: bytes read plus written per second, best of five. */
  static double hostCopyGbs() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment src = a.allocate(HOST_COPY_BYTES, 64);
      MemorySegment dst = a.allocate(HOST_COPY_BYTES, 64);
      src.fill((byte) 1);
      double best = Double.MAX_VALUE;
      for (int i = 0; i < 5; i++) {
        long t = System.nanoTime();
        MemorySegment.copy(src, 0, dst, 0, HOST_COPY_BYTES);
        best = Math.min(best, (System.nanoTime() - t) / 1e9);
      }
      return 2 * HOST_COPY_BYTES / best / 1e9;
    }
  }

  /** Device copy bandwidth and the mean cost of 1000 back-to-back 4-byte memsets on one GPU. */
  private static String deviceCopyAndLaunch(int ordinal) {
    CudaDriver d = CudaDriver.get();
    int dev = d.device(ordinal);
    long ctx = d.primaryContextRetain(dev);
    try {
      d.setCurrentContext(ctx);
      try (CudaStream s = CudaStream.create();
          DeviceBuffer a = DeviceBuffer.allocate(DEVICE_COPY_BYTES);
          DeviceBuffer b = DeviceBuffer.allocate(DEVICE_COPY_BYTES);
          CudaEvent start = CudaEvent.create();
          CudaEvent end = CudaEvent.create()) {
        a.zero(s);
        double best = Double.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
          start.record(s);
          d.memcpyDtoDAsync(b.ptr(), a.ptr(), DEVICE_COPY_BYTES, s.handle());
          end.record(s);
          end.synchronize();
          best = Math.min(best, end.millisSince(start) / 1e3);
        }
        int ops = 1000;
        s.synchronize();
        long t = System.nanoTime();
        for (int i = 0; i < ops; i++) {
          d.memsetD32Async(b.ptr(), i, 1, s.handle());
        }
        s.synchronize();
        double us = (System.nanoTime() - t) / 1e3 / ops;
        return String.format(
            Locale.ROOT,
            "device copy bandwidth %.0f GB/s (read + written), %.2f us per queued tiny operation",
            2 * DEVICE_COPY_BYTES / best / 1e9,
            us);
      }
    } finally {
      d.primaryContextRelease(dev);
    }
  }
}
