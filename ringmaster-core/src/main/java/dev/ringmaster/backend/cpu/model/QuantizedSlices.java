package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Quantization;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.QuantizedTensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Row and column slices of quantized weights for tensor-parallel shards, codes and scales cut
 * consistently: a slice may not start inside an FP8 128x128 block or an NVFP4 16-element group,
 * since the rank would then need a scale it shares with its neighbour. Row slices are views of the
 * mapped file; column slices are copied.
 */
final class QuantizedSlices {
  private static final int BLOCK = Quantization.FP8_BLOCK;
  private static final int GROUP = Quantization.NVFP4_GROUP;

  private QuantizedSlices() {}

  /** Rows {@code [r0, r0 + rn)} of {@code q} (a column-parallel shard, or the whole matrix). */
  static CpuMatrix rows(QuantizedTensor q, int r0, int rn) {
    int cols = q.cols();
    MemorySegment codes = q.weight().data();
    return switch (q.format()) {
      case FP8_BLOCK -> {
        if (r0 % BLOCK != 0) {
          throw split(q, "row", r0, BLOCK);
        }
        int scaleCols = ceilDiv(cols, BLOCK);
        long sr0 = r0 / BLOCK;
        long srn = ceilDiv(r0 + rn, BLOCK) - sr0;
        MemorySegment scales = q.scales().data().asSlice(sr0 * scaleCols * 4, srn * scaleCols * 4);
        yield new CpuMatrix(
            codes.asSlice((long) r0 * cols, (long) rn * cols),
            DType.F8_E4M3,
            rn,
            cols,
            new Quantization.Fp8Block(scales, scaleCols));
      }
      case FP8_TENSOR ->
          new CpuMatrix(
              codes.asSlice((long) r0 * cols, (long) rn * cols),
              DType.F8_E4M3,
              rn,
              cols,
              new Quantization.Fp8Tensor(q.globalScale()));
      case NVFP4 -> {
        long groups = cols / GROUP;
        MemorySegment scales = q.scales().data().asSlice(r0 * groups, rn * groups);
        yield new CpuMatrix(
            codes.asSlice((long) r0 * (cols / 2), (long) rn * (cols / 2)),
            DType.U8,
            rn,
            cols,
            new Quantization.Nvfp4(scales, q.globalScale()));
      }
    };
  }

  /**
   * Columns {@code [c0, c0 + cn)} of {@code q}, copied into {@code arena} (a row-parallel shard).
   */
  static CpuMatrix cols(QuantizedTensor q, int c0, int cn, Arena arena) {
    int rows = q.rows();
    int cols = q.cols();
    MemorySegment codes = q.weight().data();
    return switch (q.format()) {
      case FP8_BLOCK -> {
        if (c0 % BLOCK != 0) {
          throw split(q, "column", c0, BLOCK);
        }
        MemorySegment dst = copyBlock(arena, codes, rows, cols, c0, cn);
        int scaleRows = ceilDiv(rows, BLOCK);
        int scaleCols = ceilDiv(cols, BLOCK);
        int sc0 = c0 / BLOCK;
        int scn = ceilDiv(c0 + cn, BLOCK) - sc0;
        MemorySegment scales =
            copyBlock(arena, q.scales().data(), scaleRows, scaleCols * 4L, sc0 * 4L, scn * 4L);
        yield new CpuMatrix(dst, DType.F8_E4M3, rows, cn, new Quantization.Fp8Block(scales, scn));
      }
      case FP8_TENSOR ->
          new CpuMatrix(
              copyBlock(arena, codes, rows, cols, c0, cn),
              DType.F8_E4M3,
              rows,
              cn,
              new Quantization.Fp8Tensor(q.globalScale()));
      case NVFP4 -> {
        if (c0 % GROUP != 0 || cn % GROUP != 0) {
          throw split(q, "column", c0 % GROUP != 0 ? c0 : c0 + cn, GROUP);
        }
        MemorySegment dst = copyBlock(arena, codes, rows, cols / 2, c0 / 2, cn / 2);
        MemorySegment scales =
            copyBlock(arena, q.scales().data(), rows, cols / GROUP, c0 / GROUP, cn / GROUP);
        yield new CpuMatrix(
            dst, DType.U8, rows, cn, new Quantization.Nvfp4(scales, q.globalScale()));
      }
    };
  }

  /** Bytes {@code [b0, b0 + bn)} of each of {@code rows} rows of {@code rowBytes}, copied. */
  private static MemorySegment copyBlock(
      Arena arena, MemorySegment src, long rows, long rowBytes, long b0, long bn) {
    MemorySegment dst = arena.allocate(rows * bn, 8);
    for (long r = 0; r < rows; r++) {
      MemorySegment.copy(src, r * rowBytes + b0, dst, r * bn, bn);
    }
    return dst;
  }

  private static ModelLoadException split(QuantizedTensor q, String dim, int at, int unit) {
    String what =
        q.format() == QuantizedTensor.Format.NVFP4
            ? "an NVFP4 group of " + unit + " elements"
            : "an FP8 " + unit + "x" + unit + " scale block";
    return new ModelLoadException(
        q.weight().file()
            + ": tensor '"
            + q.weight().name()
            + "' ["
            + q.rows()
            + ", "
            + q.cols()
            + "]: this rank's shard would start or end at "
            + dim
            + " "
            + at
            + ", inside "
            + what
            + "; choose a --tp-size that cuts this dimension at multiples of "
            + unit);
  }

  private static int ceilDiv(int a, int b) {
    return (a + b - 1) / b;
  }
}
