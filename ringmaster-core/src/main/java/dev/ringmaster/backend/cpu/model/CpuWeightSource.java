package dev.ringmaster.backend.cpu.model;

import dev.ringmaster.backend.cpu.CpuKernelContext;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.weights.WeightStore;
import java.lang.foreign.Arena;

/**
 * Weights for the CPU backend: mapped from the checkpoint in their disk format (row slices are
 * views; column slices, which are not contiguous in the file, are copied into an arena the model
 * owns). Quantized linears (FP8, NVFP4) stay quantized, with their scales; embeddings, norms and
 * anything else the checkpoint stores in f32, bf16 or f16 is read as before.
 */
final class CpuWeightSource implements WeightSource<CpuTensor> {
  private final WeightReader w;

  CpuWeightSource(
      WeightStore store, QuantizationConfig quantization, Arena copies, CpuKernelContext kernels) {
    this.w = new WeightReader(store, quantization, copies, kernels);
  }

  @Override
  public boolean contains(String name) {
    return w.store().contains(name);
  }

  @Override
  public CpuTensor vector(String name, int n) {
    return new CpuTensor.Vector(w.vector(name, n));
  }

  @Override
  public CpuTensor linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias) {
    if (rowSlice.start() == 0 && rowSlice.count() == rows) {
      return new CpuTensor.Matrix(w.linear(prefix, rows, cols, bias));
    }
    return new CpuTensor.Matrix(
        w.linearRows(prefix, rows, cols, rowSlice.start(), rowSlice.count(), bias));
  }

  @Override
  public CpuTensor linearCols(String prefix, int rows, int cols, Slice colSlice, boolean bias) {
    return new CpuTensor.Matrix(
        w.linearCols(prefix, rows, cols, colSlice.start(), colSlice.count(), bias));
  }

  @Override
  public CpuTensor latentProjection(String name, int rows, int cols, Slice rowSlice) {
    float[] values = w.matrixRowsAsFloats(name, rows, cols, rowSlice.start(), rowSlice.count());
    return new CpuTensor.Latent(values, rowSlice.count(), cols);
  }

  @Override
  public CpuTensor gateUp(String gatePrefix, String upPrefix, int inter, int hidden, Slice part) {
    return new CpuTensor.GateUp(
        w.linearRows(
            gatePrefix, inter, hidden, part.start(), part.count(), contains(gatePrefix + ".bias")),
        w.linearRows(
            upPrefix, inter, hidden, part.start(), part.count(), contains(upPrefix + ".bias")));
  }

  @Override
  public CpuTensor experts(
      ExpertTensors t, int numExperts, int[] ids, int hidden, int inter, Slice part) {
    DenseMlp[] experts = new DenseMlp[ids.length];
    boolean fused = contains(t.fusedGateUp());
    int i0 = part.start();
    int in = part.count();
    long[] gu = {numExperts, 2L * inter, hidden};
    long[] dn = {numExperts, hidden, inter};
    for (int k = 0; k < ids.length; k++) {
      int id = ids[k];
      if (fused) {
        experts[k] =
            new DenseMlp(
                w.linear(w.slice3d(t.fusedGateUp(), gu, id, i0, in)),
                w.linear(w.slice3d(t.fusedGateUp(), gu, id, inter + i0, in)),
                w.linear(w.slice3dCols(t.fusedDown(), dn, id, i0, in)));
      } else {
        experts[k] =
            new DenseMlp(
                w.linear(w.matrixRows(t.gate(id), inter, hidden, i0, in)),
                w.linear(w.matrixRows(t.up(id), inter, hidden, i0, in)),
                w.linear(w.matrixCols(t.down(id), hidden, inter, i0, in)));
      }
    }
    return new CpuTensor.Experts(ids, experts);
  }
}
