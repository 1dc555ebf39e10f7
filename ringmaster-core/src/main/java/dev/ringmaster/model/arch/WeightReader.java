package dev.ringmaster.model.arch;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.weights.TensorView;
import dev.ringmaster.model.weights.WeightStore;

/** Reads named tensors of a checkpoint as CPU matrices (mapped, not copied) or f32 vectors. */
final class WeightReader {
  private final WeightStore store;

  WeightReader(WeightStore store) {
    this.store = store;
  }

  WeightStore store() {
    return store;
  }

  CpuMatrix matrix(String name, int rows, int cols) {
    TensorView t = store.require(name, rows, cols);
    return new CpuMatrix(t.data(), floatType(t), rows, cols);
  }

  Linear linear(String prefix, int out, int in, boolean bias) {
    CpuMatrix w = matrix(prefix + ".weight", out, in);
    float[] b = bias ? vector(prefix + ".bias", out) : null;
    return new Linear(w, b);
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
    long cols = shape[2];
    long elem = floatType(t).bytes();
    long off = ((long) index * shape[1] + rowStart) * cols * elem;
    return new CpuMatrix(t.data().asSlice(off, rows * cols * elem), floatType(t), rows, (int) cols);
  }

  float[] matrixAsFloats(String name, int rows, int cols) {
    return toFloats(store.require(name, rows, cols));
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
