package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.weights.TensorView;

/**
 * Weights for the GPU backend: each tensor the architecture asks for, uploaded as bf16 matrices and
 * f32 vectors through a {@link WeightUploader} (GPU thread only). Gate and up projections land in
 * one matrix, routed experts in two stacked buffers, as the kernels read them.
 */
final class GpuWeightSource implements WeightSource<GpuTensor> {
  private final WeightUploader up;

  GpuWeightSource(WeightUploader up) {
    this.up = up;
  }

  @Override
  public boolean contains(String name) {
    return up.store().contains(name);
  }

  @Override
  public GpuTensor vector(String name, int n) {
    return new GpuTensor.Vec(up.vector(name, n), n);
  }

  @Override
  public GpuTensor linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias) {
    boolean whole = rowSlice.start() == 0 && rowSlice.count() == rows;
    DeviceMatrix m =
        whole
            ? up.matrix(prefix + ".weight", rows, cols)
            : up.matrixRows(prefix + ".weight", rows, cols, rowSlice.start(), rowSlice.count());
    if (bias) {
      m =
          m.withBias(
              whole
                  ? up.vector(prefix + ".bias", rows)
                  : up.vectorSlice(prefix + ".bias", rows, rowSlice.start(), rowSlice.count()));
    }
    return new GpuTensor.Mat(m);
  }

  @Override
  public GpuTensor linearCols(String prefix, int rows, int cols, Slice colSlice, boolean bias) {
    DeviceMatrix m =
        up.matrixCols(prefix + ".weight", rows, cols, colSlice.start(), colSlice.count());
    return new GpuTensor.Mat(bias ? m.withBias(up.vector(prefix + ".bias", rows)) : m);
  }

  @Override
  public GpuTensor latentProjection(String name, int rows, int cols, Slice rowSlice) {
    return new GpuTensor.Mat(up.matrixRows(name, rows, cols, rowSlice.start(), rowSlice.count()));
  }

  @Override
  public GpuTensor gateUp(String gatePrefix, String upPrefix, int total, int h, Slice part) {
    int i0 = part.start();
    int inter = part.count();
    long from = (long) i0 * h;
    DeviceBuffer gu = up.allocate(4L * inter * h);
    up.bf16Into(
        gu, 0, up.store().require(gatePrefix + ".weight", total, h), from, (long) inter * h);
    up.bf16Into(
        gu,
        2L * inter * h,
        up.store().require(upPrefix + ".weight", total, h),
        from,
        (long) inter * h);
    // mlp_bias checkpoints (some V2 variants) bias all three projections; gate|up biases fused too.
    long bias = up.vectorSlicesOrZeros(total, i0, inter, gatePrefix + ".bias", upPrefix + ".bias");
    return new GpuTensor.GateUp(new DeviceMatrix(gu.ptr(), 2 * inter, h, bias), inter);
  }

  @Override
  public GpuTensor experts(
      ExpertTensors t, int numExperts, int[] ids, int h, int total, Slice part) {
    int e = ids.length;
    int i0 = part.start();
    int inter = part.count();
    long expertGu = 2L * inter * h;
    long expertDown = (long) h * inter;
    DeviceBuffer w13 = up.allocate(2 * expertGu * e);
    DeviceBuffer w2 = up.allocate(2 * expertDown * e);
    long half = (long) inter * h;
    if (contains(t.fusedGateUp())) {
      TensorView gu = up.store().require(t.fusedGateUp(), numExperts, 2L * total, h);
      TensorView dn = up.store().require(t.fusedDown(), numExperts, h, total);
      for (int k = 0; k < e; k++) {
        long rows = 2L * total * ids[k];
        up.bf16Into(w13, 2 * expertGu * k, gu, (rows + i0) * h, half);
        up.bf16Into(w13, 2 * (expertGu * k + half), gu, (rows + total + i0) * h, half);
        up.bf16ColsInto(w2, 2 * expertDown * k, dn, (long) ids[k] * h * total, h, total, i0, inter);
      }
    } else {
      for (int k = 0; k < e; k++) {
        long from = (long) i0 * h;
        up.bf16Into(
            w13, 2 * expertGu * k, up.store().require(t.gate(ids[k]), total, h), from, half);
        up.bf16Into(
            w13, 2 * (expertGu * k + half), up.store().require(t.up(ids[k]), total, h), from, half);
        up.bf16ColsInto(
            w2,
            2 * expertDown * k,
            up.store().require(t.down(ids[k]), h, total),
            0,
            h,
            total,
            i0,
            inter);
      }
    }
    return new GpuTensor.Experts(w13.ptr(), w2.ptr());
  }
}
