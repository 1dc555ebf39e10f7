package dev.ringmaster.backend.cpu;

import dev.ringmaster.backend.DType;
import java.lang.foreign.MemorySegment;

/**
 * A row-major weight matrix of {@code rows x cols} elements held in native or mapped memory, as
 * stored by PyTorch's {@code nn.Linear}: {@code rows} is the output features, {@code cols} the
 * input features. bf16 and f16 weights stay in their disk format; kernels convert on the fly.
 *
 * @param data the elements, row-major, little-endian
 * @param dtype element type (F32, BF16 or F16)
 * @param rows number of rows (output features)
 * @param cols number of columns (input features)
 */
public record CpuMatrix(MemorySegment data, DType dtype, int rows, int cols) {
  /** Checks that the segment holds exactly {@code rows * cols} elements of a float type. */
  public CpuMatrix {
    if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
      throw new IllegalArgumentException("matrix dtype must be F32, BF16 or F16, got " + dtype);
    }
    if (data.byteSize() != (long) rows * cols * dtype.bytes()) {
      throw new IllegalArgumentException(
          "matrix of "
              + rows
              + "x"
              + cols
              + " "
              + dtype
              + " needs "
              + (long) rows * cols * dtype.bytes()
              + " bytes, segment has "
              + data.byteSize());
    }
  }

  /** Reads element (r, c) as a float (slow path for references and tests). */
  public float get(int r, int c) {
    long i = (long) r * cols + c;
    return Numerics.load(data, dtype, i);
  }
}
