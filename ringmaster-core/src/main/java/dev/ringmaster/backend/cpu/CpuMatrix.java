package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A row-major weight matrix of {@code rows x cols} elements held in native or mapped memory, as
 * stored by PyTorch's {@code nn.Linear}: {@code rows} is the output features, {@code cols} the
 * input features. Weights stay in their disk format and kernels convert on the fly: f32, bf16 and
 * f16 directly; quantized matrices ({@code quant} not null) are FP8 e4m3 codes ({@code F8_E4M3}) or
 * packed NVFP4 codes ({@code U8}, {@code cols / 2} bytes per row) that {@link Quantization} scales.
 *
 * <p>A bf16 matrix used in a CPU product also gets a copy in the kernels' packed layout ({@link
 * PackedBf16}), made on first use, once per vector width, and kept as long as the matrix. Equality
 * is by value, over the five components, as for a record.
 */
public final class CpuMatrix {
  private final MemorySegment data;
  private final DType dtype;
  private final int rows;
  private final int cols;
  private final Quantization quant;
  // One packed copy per vector width (4, 8 or 16 lanes), made on first use.
  private final MemorySegment[] packed = new MemorySegment[3];

  /**
   * A matrix over {@code data}; checks that the segments hold exactly the elements and scales of
   * the shape.
   *
   * @param data the elements (or codes), row-major, little-endian
   * @param dtype element type (F32, BF16 or F16; F8_E4M3 or U8 when quantized)
   * @param rows number of rows (output features)
   * @param cols number of columns (input features)
   * @param quant how the codes decode, or null for a plain float matrix
   */
  public CpuMatrix(MemorySegment data, DType dtype, int rows, int cols, Quantization quant) {
    this.data = data;
    this.dtype = dtype;
    this.rows = rows;
    this.cols = cols;
    this.quant = quant;
    long bytes = expectedBytes(dtype, rows, cols, quant);
    if (data.byteSize() != bytes) {
      throw new IllegalArgumentException(
          "matrix of "
              + rows
              + "x"
              + cols
              + " "
              + dtype
              + (quant == null ? "" : " (" + quant.getClass().getSimpleName() + ")")
              + " needs "
              + bytes
              + " bytes, segment has "
              + data.byteSize());
    }
    checkScales(rows, cols, quant);
  }

  /** A plain f32, bf16 or f16 matrix. */
  public CpuMatrix(MemorySegment data, DType dtype, int rows, int cols) {
    this(data, dtype, rows, cols, null);
  }

  /** The elements (or codes), row-major, little-endian. */
  public MemorySegment data() {
    return data;
  }

  /** Element type (F32, BF16 or F16; F8_E4M3 or U8 when quantized). */
  public DType dtype() {
    return dtype;
  }

  /** Number of rows (output features). */
  public int rows() {
    return rows;
  }

  /** Number of columns (input features). */
  public int cols() {
    return cols;
  }

  /** How the codes decode, or null for a plain float matrix. */
  public Quantization quant() {
    return quant;
  }

  /**
   * The bf16 weights in {@link PackedBf16}'s layout for {@code lanes}-lane vectors, packed on the
   * first call for that width (the caller must be able to read {@link #data}).
   */
  MemorySegment packedBf16(int lanes) {
    int slot = Integer.numberOfTrailingZeros(lanes) - 2;
    MemorySegment p = packed[slot];
    if (p == null) {
      synchronized (packed) {
        p = packed[slot];
        if (p == null) {
          p = PackedBf16.pack(data, rows, cols, lanes);
          packed[slot] = p;
        }
      }
    }
    return p;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CpuMatrix m
        && data.equals(m.data)
        && dtype == m.dtype
        && rows == m.rows
        && cols == m.cols
        && Objects.equals(quant, m.quant);
  }

  @Override
  public int hashCode() {
    return Objects.hash(data, dtype, rows, cols, quant);
  }

  @Override
  public String toString() {
    return "CpuMatrix[data="
        + data
        + ", dtype="
        + dtype
        + ", rows="
        + rows
        + ", cols="
        + cols
        + ", quant="
        + quant
        + "]";
  }

  /** Whether the matrix holds quantized codes. */
  public boolean quantized() {
    return quant != null;
  }

  /** Reads element (r, c) as a float (slow path for references and tests). */
  public float get(int r, int c) {
    if (quant != null) {
      float[] row = new float[cols];
      Dequantizer.row(this, r, row, 0);
      return row[c];
    }
    long i = (long) r * cols + c;
    return Numerics.load(data, dtype, i);
  }

  private static long expectedBytes(DType dtype, int rows, int cols, Quantization quant) {
    switch (quant) {
      case null -> {
        if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
          throw new IllegalArgumentException("matrix dtype must be F32, BF16 or F16, got " + dtype);
        }
        return (long) rows * cols * dtype.bytes();
      }
      case Quantization.Fp8Block b -> {
        requireDtype(dtype, DType.F8_E4M3, "FP8");
        return (long) rows * cols;
      }
      case Quantization.Fp8Tensor t -> {
        requireDtype(dtype, DType.F8_E4M3, "FP8");
        return (long) rows * cols;
      }
      case Quantization.Nvfp4 n -> {
        requireDtype(dtype, DType.U8, "NVFP4");
        if (cols % Quantization.NVFP4_GROUP != 0) {
          throw new IllegalArgumentException(
              "NVFP4 matrix needs a multiple of 16 columns, got " + cols);
        }
        return (long) rows * cols / 2;
      }
    }
  }

  private static void checkScales(int rows, int cols, Quantization quant) {
    long want;
    long have;
    switch (quant) {
      case Quantization.Fp8Block b -> {
        int blockCols = (cols + Quantization.FP8_BLOCK - 1) / Quantization.FP8_BLOCK;
        if (b.scaleCols() != blockCols) {
          throw new IllegalArgumentException(
              "FP8 scales have " + b.scaleCols() + " block columns, need " + blockCols);
        }
        want = (long) (rows + Quantization.FP8_BLOCK - 1) / Quantization.FP8_BLOCK * blockCols * 4;
        have = b.scales().byteSize();
      }
      case Quantization.Nvfp4 n -> {
        want = (long) rows * (cols / Quantization.NVFP4_GROUP);
        have = n.scales().byteSize();
      }
      case null, default -> {
        return;
      }
    }
    if (want != have) {
      throw new IllegalArgumentException(
          "scales of a " + rows + "x" + cols + " matrix need " + want + " bytes, have " + have);
    }
  }

  private static void requireDtype(DType got, DType want, String format) {
    if (got != want) {
      throw new IllegalArgumentException(format + " matrix codes must be " + want + ", got " + got);
    }
  }
}
