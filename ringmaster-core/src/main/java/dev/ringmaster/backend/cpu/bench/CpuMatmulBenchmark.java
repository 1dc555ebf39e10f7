package dev.ringmaster.backend.cpu.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatmul;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.backend.cpu.Quantization;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Weight-streaming speed of {@link CpuMatmul#matmul}: for each weight format (float dtypes, FP8,
 * NVFP4), shape, vector width and batch size, the median time of one call and the weight bytes
 * (codes and scales) it streams per second, next to the machine's measured memory read bandwidth.
 * Quantized weights are random finite codes with scales of typical size.
 *
 * <p>Widths wider than the CPU's SIMD units are emulated by the Vector API, orders of magnitude
 * slower; they are listed as skipped unless asked for.
 */
public final class CpuMatmulBenchmark {
  private CpuMatmulBenchmark() {}

  /** A weight matrix shape: rows (output features) by cols (input features). */
  public record Shape(int rows, int cols) {
    /** Parses {@code 4096x4096}. */
    public static Shape parse(String text) {
      String[] parts = text.toLowerCase(Locale.ROOT).split("x");
      if (parts.length != 2) {
        throw new IllegalArgumentException("shape must look like 4096x4096, got '" + text + "'");
      }
      return new Shape(Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip()));
    }

    @Override
    public String toString() {
      return rows + "x" + cols;
    }
  }

  /**
   * What to measure.
   *
   * @param vectorBits widths to try (128, 256, 512)
   * @param dtypes weight formats
   * @param shapes weight shapes
   * @param tokens batch sizes
   * @param secondsPerCase timed seconds per case (after a warm-up), at least 5 calls
   * @param bandwidthBufferBytes buffer for the memory bandwidth measure, far above the caches
   * @param includeEmulated also time widths the CPU only emulates
   * @param threads kernel threads, the calling thread included; 0 for one per core
   * @param referenceDequantization time quantized weights with rows decoded by the scalar reference
   *     ({@link CpuKernelContext#withReferenceDequantization}), to compare with the vector decoders
   */
  public record Options(
      List<Integer> vectorBits,
      List<WeightFormat> dtypes,
      List<Shape> shapes,
      List<Integer> tokens,
      double secondsPerCase,
      long bandwidthBufferBytes,
      boolean includeEmulated,
      int threads,
      boolean referenceDequantization) {
    /** bf16 and f32; 4096x4096 and 11008x4096; n = 1 and 8; every width; 1 s per case. */
    public static Options defaults() {
      return new Options(
          List.of(128, 256, 512),
          List.of(WeightFormat.BF16, WeightFormat.F32),
          List.of(new Shape(4096, 4096), new Shape(11008, 4096)),
          List.of(1, 8),
          1.0,
          1L << 30,
          false,
          0,
          false);
    }
  }

  /**
   * One timed case.
   *
   * @param cores available processors
   * @param threads kernel threads
   * @param vectorBits vector width used
   * @param dtype weight format
   * @param shape weight shape, rows x cols
   * @param n tokens per call
   * @param ms median milliseconds per call
   * @param gbPerSecond weight bytes streamed per second, in 10^9
   * @param fractionOfMemoryBandwidth {@code gbPerSecond} over the measured read bandwidth
   */
  public record Result(
      int cores,
      int threads,
      int vectorBits,
      String dtype,
      String shape,
      int n,
      double ms,
      double gbPerSecond,
      double fractionOfMemoryBandwidth) {}

  /**
   * The whole run.
   *
   * @param cores available processors
   * @param threads kernel threads
   * @param referenceDequantization whether quantized rows took the scalar reference decode
   * @param preferredVectorBits widest width the CPU runs natively
   * @param memoryBandwidthGbPerSecond read bandwidth, all threads
   * @param oneThreadBandwidthGbPerSecond read bandwidth, one thread
   * @param results the timed cases
   * @param skipped cases not timed, and why
   */
  public record Report(
      int cores,
      int threads,
      boolean referenceDequantization,
      int preferredVectorBits,
      double memoryBandwidthGbPerSecond,
      double oneThreadBandwidthGbPerSecond,
      List<Result> results,
      List<String> skipped) {}

  /** Runs the benchmark; {@code log} gets one line per case as it finishes (or null). */
  public static Report run(Options options, PrintStream log) {
    int cores = Runtime.getRuntime().availableProcessors();
    int preferred = CpuKernelContext.preferredVectorBits();
    int threads;
    MemoryBandwidth.Result bandwidth;
    try (CpuKernelContext kernels = new CpuKernelContext(0, options.threads())) {
      threads = kernels.threads();
      bandwidth = MemoryBandwidth.measure(kernels, options.bandwidthBufferBytes(), 5);
    }
    if (log != null) {
      log.printf(
          Locale.ROOT,
          "memory read bandwidth: %.1f GB/s (%d threads), %.1f GB/s (1 thread)%n",
          bandwidth.allThreads(),
          threads,
          bandwidth.oneThread());
    }
    List<Result> results = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    for (int bits : options.vectorBits()) {
      if (bits > preferred && !options.includeEmulated()) {
        skipped.add(
            bits
                + "-bit vectors: emulated on this CPU (native up to "
                + preferred
                + " bits), too slow to time");
      }
    }
    for (WeightFormat dtype : options.dtypes()) {
      for (Shape shape : options.shapes()) {
        try (Arena arena = Arena.ofShared()) {
          CpuMatrix w = randomMatrix(arena, dtype, shape);
          for (int bits : options.vectorBits()) {
            if (bits > preferred && !options.includeEmulated()) {
              continue;
            }
            try (CpuKernelContext kernels =
                options.referenceDequantization()
                    ? CpuKernelContext.withReferenceDequantization(bits, threads)
                    : new CpuKernelContext(bits, threads)) {
              for (int n : options.tokens()) {
                double ms = medianMillis(kernels, w, n, options.secondsPerCase());
                double gbs = weightBytes(w) / (ms * 1e6);
                Result r =
                    new Result(
                        cores,
                        threads,
                        bits,
                        dtype.label(),
                        shape.toString(),
                        n,
                        ms,
                        gbs,
                        gbs / bandwidth.allThreads());
                results.add(r);
                if (log != null) {
                  log.println(row(r));
                }
              }
            }
          }
        }
      }
    }
    return new Report(
        cores,
        threads,
        options.referenceDequantization(),
        preferred,
        bandwidth.allThreads(),
        bandwidth.oneThread(),
        results,
        skipped);
  }

  /** The results as an aligned text table. */
  public static String table(Report report) {
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "cores %d, threads %d, native vector bits %d, memory read %.1f GB/s (1 thread %.1f)%s%n",
            report.cores(),
            report.threads(),
            report.preferredVectorBits(),
            report.memoryBandwidthGbPerSecond(),
            report.oneThreadBandwidthGbPerSecond(),
            report.referenceDequantization()
                ? ", quantized rows by the scalar reference decode"
                : ""));
    s.append(
        String.format(
            Locale.ROOT,
            "%5s %10s %11s %3s %9s %7s %6s%n",
            "bits",
            "dtype",
            "shape",
            "n",
            "ms",
            "GB/s",
            "of mem"));
    for (Result r : report.results()) {
      s.append(row(r)).append(System.lineSeparator());
    }
    for (String note : report.skipped()) {
      s.append("skipped: ").append(note).append(System.lineSeparator());
    }
    return s.toString();
  }

  /** The report as a JSON object. */
  public static String json(Report report) {
    try {
      return new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .writeValueAsString(report);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Runs with default options, printing progress, the table and the JSON. Flags: {@code --bits
   * 128,256}, {@code --dtypes bf16,f32,f16,fp8-block,fp8-tensor,nvfp4}, {@code --shapes
   * 4096x4096,11008x4096}, {@code --n 1,8}, {@code --seconds 1}, {@code --threads 16}, {@code
   * --emulated}, {@code --reference-dequantization}.
   */
  public static void main(String[] args) {
    Options o = parse(args);
    Report report = run(o, System.out);
    System.out.println();
    System.out.print(table(report));
    System.out.println(json(report));
  }

  static Options parse(String[] args) {
    Options d = Options.defaults();
    List<Integer> bits = d.vectorBits();
    List<WeightFormat> dtypes = d.dtypes();
    List<Shape> shapes = d.shapes();
    List<Integer> tokens = d.tokens();
    double seconds = d.secondsPerCase();
    boolean emulated = d.includeEmulated();
    int threads = d.threads();
    boolean reference = d.referenceDequantization();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("--emulated")) {
        emulated = true;
        continue;
      }
      if (flag.equals("--reference-dequantization")) {
        reference = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing value after " + flag);
      }
      String value = args[++i];
      List<String> items = Arrays.stream(value.split(",")).map(String::strip).toList();
      switch (flag) {
        case "--bits" -> bits = items.stream().map(Integer::parseInt).toList();
        case "--dtypes" -> dtypes = items.stream().map(WeightFormat::parse).toList();
        case "--shapes" -> shapes = items.stream().map(Shape::parse).toList();
        case "--n" -> tokens = items.stream().map(Integer::parseInt).toList();
        case "--seconds" -> seconds = Double.parseDouble(value);
        case "--threads" -> threads = Integer.parseInt(value);
        default -> throw new IllegalArgumentException("unknown flag " + flag);
      }
    }
    return new Options(
        bits,
        dtypes,
        shapes,
        tokens,
        seconds,
        d.bandwidthBufferBytes(),
        emulated,
        threads,
        reference);
  }

  private static String row(Result r) {
    return String.format(
        Locale.ROOT,
        "%5d %10s %11s %3d %9.3f %7.1f %5.0f%%",
        r.vectorBits(),
        r.dtype(),
        r.shape(),
        r.n(),
        r.ms(),
        r.gbPerSecond(),
        100 * r.fractionOfMemoryBandwidth());
  }

  private static double medianMillis(CpuKernelContext kernels, CpuMatrix w, int n, double seconds) {
    float[] x = new float[n * w.cols()];
    SplittableRandom random = new SplittableRandom(n);
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) random.nextDouble(-1, 1);
    }
    float[] out = new float[n * w.rows()];
    long warmUntil = System.nanoTime() + (long) (0.3e9 * Math.max(0.2, seconds));
    for (int i = 0; i < 3 || System.nanoTime() < warmUntil; i++) {
      CpuMatmul.matmul(kernels, out, x, n, w);
    }
    List<Long> times = new ArrayList<>();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    while (times.size() < 5 || System.nanoTime() < end) {
      long start = System.nanoTime();
      CpuMatmul.matmul(kernels, out, x, n, w);
      times.add(System.nanoTime() - start);
    }
    long[] sorted = times.stream().mapToLong(Long::longValue).sorted().toArray();
    return sorted[sorted.length / 2] / 1e6;
  }

  private static CpuMatrix randomMatrix(Arena arena, WeightFormat format, Shape shape) {
    long count = (long) shape.rows() * shape.cols();
    SplittableRandom random = new SplittableRandom(count);
    if (!format.quantized()) {
      DType dtype = DType.valueOf(format.name());
      MemorySegment data = arena.allocate(count * dtype.bytes(), 64);
      for (long i = 0; i < count; i++) {
        Numerics.store(data, dtype, i, (float) random.nextDouble(-1, 1));
      }
      return new CpuMatrix(data, dtype, shape.rows(), shape.cols());
    }
    int rows = shape.rows();
    int cols = shape.cols();
    if (format == WeightFormat.NVFP4) {
      if (cols % Quantization.NVFP4_GROUP != 0) {
        throw new IllegalArgumentException("NVFP4 needs a multiple of 16 columns, got " + shape);
      }
      MemorySegment packed = randomBytes(arena, count / 2, random, 0, 256);
      // e4m3 scale codes 0x20..0x5f: 2^-3 to 2^4, as a quantizer's block maxima give.
      MemorySegment scales = randomBytes(arena, count / 16, random, 0x20, 0x60);
      return new CpuMatrix(packed, DType.U8, rows, cols, new Quantization.Nvfp4(scales, 3.7e-4f));
    }
    // Finite e4m3 codes: 0x7f and 0xff are NaN.
    MemorySegment codes = randomBytes(arena, count, random, 0, 255);
    for (long i = 0; i < count; i++) {
      if ((codes.get(ValueLayout.JAVA_BYTE, i) & 0x7f) == 0x7f) {
        codes.set(ValueLayout.JAVA_BYTE, i, (byte) 0x7e);
      }
    }
    if (format == WeightFormat.FP8_TENSOR) {
      return new CpuMatrix(codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Tensor(2.2e-3f));
    }
    int blockCols = (cols + Quantization.FP8_BLOCK - 1) / Quantization.FP8_BLOCK;
    int blocks = (rows + Quantization.FP8_BLOCK - 1) / Quantization.FP8_BLOCK * blockCols;
    MemorySegment scales = arena.allocate(blocks * 4L, 64);
    for (int i = 0; i < blocks; i++) {
      scales.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextDouble(1e-3, 1e-2));
    }
    return new CpuMatrix(
        codes, DType.F8_E4M3, rows, cols, new Quantization.Fp8Block(scales, blockCols));
  }

  private static MemorySegment randomBytes(
      Arena arena, long count, SplittableRandom random, int from, int to) {
    MemorySegment bytes = arena.allocate(count, 64);
    for (long i = 0; i < count; i++) {
      bytes.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(from, to));
    }
    return bytes;
  }

  /** The bytes a product streams: the elements or codes, and any scales. */
  private static long weightBytes(CpuMatrix w) {
    return w.data().byteSize()
        + switch (w.quant()) {
          case Quantization.Fp8Block b -> b.scales().byteSize();
          case Quantization.Nvfp4 n -> n.scales().byteSize();
          case null, default -> 0;
        };
  }
}
