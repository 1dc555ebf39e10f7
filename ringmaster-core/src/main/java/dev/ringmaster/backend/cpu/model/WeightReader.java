package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Dequantizer;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.weights.QuantizedTensor;
import dev.ringmaster.model.weights.QuantizedTensors;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Reads named tensors of a checkpoint as CPU matrices (mapped, not copied) or f32 vectors.
 * Quantized linear weights (see {@link QuantizedTensors}) become quantized matrices with their
 * scales, sliced by {@link QuantizedSlices}.
 */
final class WeightReader {
  private final WeightStore store;
  private final QuantizationConfig quantization;
  private final Arena copies;
  private final CpuKernelContext kernels;

  /**
   * A reader over {@code store} quantized as {@code quantization} says; column slices (row-parallel
   * shards) are not contiguous in the file and are copied into {@code copies}, which the model
   * owns. Its linears run on {@code kernels}.
   */
  WeightReader(
      WeightStore store, QuantizationConfig quantization, Arena copies, CpuKernelContext kernels) {
    this.kernels = kernels;
    this.store = store;
    this.quantization = quantization;
    this.copies = copies;
  }

  private QuantizedTensor quantized(String name, int rows, int cols) {
    return QuantizedTensors.find(store, quantization, name, rows, cols);
  }

  /** A bias-free linear over {@code w}, on this reader's kernels. */
  Linear linear(CpuMatrix w) {
    return new Linear(w, null, kernels);
  }

  WeightStore store() {
    return store;
  }

  CpuMatrix matrix(String name, int rows, int cols) {
    QuantizedTensor q = quantized(name, rows, cols);
    if (q != null) {
      return QuantizedSlices.rows(q, 0, rows);
    }
    TensorView t = store.require(name, rows, cols);
    return new CpuMatrix(t.data(), floatType(t), rows, cols);
  }

  /** Rows {@code [r0, r0 + rn)} of a {@code [rows, cols]} matrix (a column-parallel shard). */
  CpuMatrix matrixRows(String name, int rows, int cols, int r0, int rn) {
    QuantizedTensor q = quantized(name, rows, cols);
    if (q != null) {
      return QuantizedSlices.rows(q, r0, rn);
    }
    TensorView t = store.require(name, rows, cols);
    long rowBytes = (long) cols * floatType(t).bytes();
    return new CpuMatrix(t.data().asSlice(r0 * rowBytes, rn * rowBytes), floatType(t), rn, cols);
  }

  /**
   * Columns {@code [c0, c0 + cn)} of a {@code [rows, cols]} matrix, copied (a row-parallel shard).
   */
  CpuMatrix matrixCols(String name, int rows, int cols, int c0, int cn) {
    QuantizedTensor q = quantized(name, rows, cols);
    if (q != null) {
      return QuantizedSlices.cols(q, c0, cn, copies);
    }
    TensorView t = store.require(name, rows, cols);
    return copyCols(t.data(), floatType(t), rows, cols, c0, cn);
  }

  private CpuMatrix copyCols(MemorySegment src, DType d, int rows, int cols, int c0, int cn) {
    long e = d.bytes();
    MemorySegment dst = copies.allocate((long) rows * cn * e, 8);
    for (int r = 0; r < rows; r++) {
      MemorySegment.copy(src, ((long) r * cols + c0) * e, dst, (long) r * cn * e, cn * e);
    }
    return new CpuMatrix(dst, d, rows, cn);
  }

  /** Column-parallel linear: output features {@code [o0, o0 + on)} (bias sliced alike). */
  Linear linearRows(String prefix, int out, int in, int o0, int on, boolean bias) {
    CpuMatrix w = matrixRows(prefix + ".weight", out, in, o0, on);
    float[] b =
        bias ? java.util.Arrays.copyOfRange(vector(prefix + ".bias", out), o0, o0 + on) : null;
    return new Linear(w, b, kernels);
  }

  /**
   * Row-parallel linear: input features {@code [i0, i0 + in)}; the bias is kept on one rank only so
   * that the allreduce of the partial outputs adds it once.
   */
  Linear linearCols(String prefix, int out, int inTotal, int i0, int inShare, boolean biasHere) {
    CpuMatrix w = matrixCols(prefix + ".weight", out, inTotal, i0, inShare);
    return new Linear(w, biasHere ? vector(prefix + ".bias", out) : null, kernels);
  }

  /** Columns of one expert slice of a fused 3D tensor {@code [E, rows, cols]}, copied. */
  CpuMatrix slice3dCols(String name, long[] shape, int index, int c0, int cn) {
    TensorView t = store.require(name, shape);
    refuseQuantizedFused(t);
    long e = floatType(t).bytes();
    int rows = (int) shape[1];
    int cols = (int) shape[2];
    MemorySegment expert = t.data().asSlice((long) index * rows * cols * e, (long) rows * cols * e);
    return copyCols(expert, floatType(t), rows, cols, c0, cn);
  }

  Linear linear(String prefix, int out, int in, boolean bias) {
    CpuMatrix w = matrix(prefix + ".weight", out, in);
    float[] b = bias ? vector(prefix + ".bias", out) : null;
    return new Linear(w, b, kernels);
  }

  /** A linear whose bias is used when present in the checkpoint. */
  Linear linearOptionalBias(String prefix, int out, int in) {
    return linear(prefix, out, in, store.contains(prefix + ".bias"));
  }

  float[] vector(String name, int n) {
    TensorView t = store.require(name, n);
    return toFloats(t);
  }

  /** Rows {@code [rowStart, rowStart + rows)} of a 3D tensor's slice {@code index}. */
  CpuMatrix slice3d(String name, long[] shape, int index, int rowStart, int rows) {
    TensorView t = store.require(name, shape);
    refuseQuantizedFused(t);
    long cols = shape[2];
    long elem = floatType(t).bytes();
    long off = ((long) index * shape[1] + rowStart) * cols * elem;
    return new CpuMatrix(t.data().asSlice(off, rows * cols * elem), floatType(t), rows, (int) cols);
  }

  /** Rows {@code [r0, r0 + rn)} of a matrix as f32. */
  float[] matrixRowsAsFloats(String name, int rows, int cols, int r0, int rn) {
    // Widen only this rank's rows, not the whole matrix.
    CpuMatrix m = matrixRows(name, rows, cols, r0, rn);
    if (m.quantized()) {
      return Dequantizer.matrix(m);
    }
    float[] out = new float[rn * cols];
    for (int i = 0; i < out.length; i++) {
      out[i] = Numerics.load(m.data(), m.dtype(), i);
    }
    return out;
  }

  /** Quantized checkpoints store experts one by one, as their producers write them. */
  private static void refuseQuantizedFused(TensorView t) {
    if (QuantizedTensors.isQuantizedDtype(t.dtype())) {
      throw new ModelLoadException(
          t.file()
              + ": fused expert tensor '"
              + t.name()
              + "' is quantized ("
              + t.dtype()
              + "); quantized experts are read in the per-expert layout"
              + " (experts.E.gate_proj.weight with its scales)");
    }
  }

  private static float[] toFloats(TensorView t) {
    DType d = floatType(t);
    float[] out = new float[Math.toIntExact(t.numel())];
    for (int i = 0; i < out.length; i++) {
      out[i] = Numerics.load(t.data(), d, i);
    }
    return out;
  }

  private static DType floatType(TensorView t) {
    if (t.dtype() != DType.F32 && t.dtype() != DType.BF16 && t.dtype() != DType.F16) {
      throw new ModelLoadException(
          t.file()
              + ": tensor '"
              + t.name()
              + "' has dtype "
              + t.dtype()
              + "; weights must be F32, BF16 or F16");
    }
    return t.dtype();
  }
}
