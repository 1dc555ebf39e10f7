package dev.ringmaster.cuda.model;

import dev.ringmaster.backend.DType;
import dev.ringmaster.backend.cpu.CpuMatrix;
import dev.ringmaster.backend.cpu.Dequantizer;
import dev.ringmaster.backend.cpu.Quantization;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.Nvfp4Layout;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.ops.ExpertTensors;
import dev.ringmaster.model.ops.WeightSource;
import dev.ringmaster.model.weights.QuantizedTensor;
import dev.ringmaster.model.weights.QuantizedTensors;
import dev.ringmaster.model.weights.TensorView;

/**
 * Weights for the GPU backend: each tensor the architecture asks for, uploaded as bf16 matrices and
 * f32 vectors through a {@link WeightUploader} (GPU thread only). Gate and up projections land in
 * one matrix, routed experts in two stacked buffers, as the kernels read them. DeepSeek FP8
 * block-scaled linears are uploaded as they are stored (e4m3 codes and f32 block scales, sliced at
 * block boundaries, {@link Fp8BlockLayout}); ModelOpt NVFP4 linears as packed e2m1 codes in the
 * device nibble order of {@link Nvfp4Layout}, their e4m3 group scales as stored and one f32 global
 * scale per part. Which modules are quantized is the checkpoint's (its exclusion lists are checked
 * by {@link QuantizedTensors#find}); the others stay bf16. Only {@code kv_b_proj}, which the
 * attention kernels read per head as bf16, is dequantized on the host.
 */
final class GpuWeightSource implements WeightSource<GpuTensor> {
  private final WeightUploader up;
  private final QuantizationConfig quantization;
  private long dequantMaxElements;

  GpuWeightSource(WeightUploader up, QuantizationConfig quantization) {
    this.up = up;
    this.quantization = quantization;
  }

  /**
   * Elements of the largest quantized matrix outside the routed experts (the bf16 scratch that the
   * many-token path dequantizes one linear into before cuBLAS), 0 when there is none.
   */
  long dequantMaxElements() {
    return dequantMaxElements;
  }

  @Override
  public boolean contains(String name) {
    return up.store().contains(name);
  }

  @Override
  public GpuTensor vector(String name, int n) {
    return new GpuTensor.Vec(up.vector(name, n), n);
  }

  /**
   * The quantized weight {@code name} of {@code [rows, cols]} (FP8 block-scaled or NVFP4), or null
   * for f32/bf16/f16.
   */
  private QuantizedTensor quantized(String name, int rows, int cols) {
    QuantizedTensor q = QuantizedTensors.find(up.store(), quantization, name, rows, cols);
    if (q != null && q.format() == QuantizedTensor.Format.FP8_TENSOR) {
      throw new ModelLoadException(
          q.weight().file()
              + ": tensor '"
              + name
              + "' is stored as "
              + q.format()
              + "; the GPU backend runs DeepSeek FP8 block-scaled and NVFP4 weights (per-tensor"
              + " FP8 runs on the CPU backend); use --device cpu");
    }
    return q;
  }

  private static boolean nvfp4(QuantizedTensor q) {
    return q.format() == QuantizedTensor.Format.NVFP4;
  }

  /** f32 global scales of NVFP4 parts, in a fresh buffer. */
  private DeviceBuffer globals(float... values) {
    DeviceBuffer b = up.allocate(4L * values.length);
    up.floatsInto(b, 0, values);
    return b;
  }

  /** Rows {@code [r0, r0 + rn)} of NVFP4 {@code q}: codes (device order) and scales. */
  private void nvfp4RowsInto(
      DeviceBuffer codes,
      long codeOffset,
      DeviceBuffer scales,
      long scaleOffset,
      QuantizedTensor q,
      int r0,
      int rn) {
    long rowBytes = q.cols() / 2;
    long scaleBytes = q.cols() / Nvfp4Layout.GROUP;
    up.fp4CodesInto(
        codes,
        codeOffset,
        q.weight().data().asSlice(r0 * rowBytes, rn * rowBytes),
        rn,
        rowBytes,
        0,
        rowBytes);
    up.bytesInto(scales, scaleOffset, q.scales().data(), r0 * scaleBytes, rn * scaleBytes);
  }

  /** Columns {@code [c0, c0 + cn)} of NVFP4 {@code q}: codes (device order) and scales. */
  private void nvfp4ColsInto(
      DeviceBuffer codes,
      long codeOffset,
      DeviceBuffer scales,
      long scaleOffset,
      QuantizedTensor q,
      int c0,
      int cn) {
    Nvfp4Layout.checkColumnCut(q, c0);
    up.fp4CodesInto(codes, codeOffset, q.weight().data(), q.rows(), q.cols() / 2, c0 / 2, cn / 2);
    int g = Nvfp4Layout.GROUP;
    up.byteColsInto(scales, scaleOffset, q.scales().data(), q.rows(), q.cols() / g, c0 / g, cn / g);
  }

  /** Rows {@code [r0, r0 + rn)} of NVFP4 {@code q} into fresh buffers, as one part. */
  private DeviceMatrix nvfp4Rows(QuantizedTensor q, int r0, int rn) {
    DeviceBuffer codes = up.allocate((long) rn * q.cols() / 2);
    DeviceBuffer scales = up.allocate((long) rn * q.cols() / Nvfp4Layout.GROUP);
    nvfp4RowsInto(codes, 0, scales, 0, q, r0, rn);
    noteDense((long) rn * q.cols());
    return DeviceMatrix.nvfp4(
        codes.ptr(), scales.ptr(), globals(q.globalScale()).ptr(), rn, q.cols(), rn);
  }

  /** Rows {@code [r0, r0 + rn)} of {@code q} into fresh buffers, as one FP8 part. */
  private DeviceMatrix fp8Rows(QuantizedTensor q, int r0, int rn) {
    int sc = Fp8BlockLayout.blocks(q.cols());
    DeviceBuffer codes = up.allocate((long) rn * q.cols());
    DeviceBuffer scales = up.allocate(4L * Fp8BlockLayout.blocks(rn) * sc);
    fp8RowsInto(codes, 0, scales, 0, q, r0, rn);
    noteDense((long) rn * q.cols());
    return DeviceMatrix.fp8(codes.ptr(), scales.ptr(), rn, q.cols(), rn);
  }

  /** Codes and scales of rows {@code [r0, r0 + rn)} of {@code q} at the given byte offsets. */
  private void fp8RowsInto(
      DeviceBuffer codes,
      long codeOffset,
      DeviceBuffer scales,
      long scaleOffset,
      QuantizedTensor q,
      int r0,
      int rn) {
    int cols = q.cols();
    int[] sr = Fp8BlockLayout.scaleRows(q, r0, rn);
    long scaleRowBytes = 4L * Fp8BlockLayout.blocks(cols);
    up.bytesInto(codes, codeOffset, q.weight().data(), (long) r0 * cols, (long) rn * cols);
    up.bytesInto(
        scales, scaleOffset, q.scales().data(), sr[0] * scaleRowBytes, sr[1] * scaleRowBytes);
  }

  /** Codes and scales of columns {@code [c0, c0 + cn)} of {@code q} at the given byte offsets. */
  private void fp8ColsInto(
      DeviceBuffer codes,
      long codeOffset,
      DeviceBuffer scales,
      long scaleOffset,
      QuantizedTensor q,
      int c0,
      int cn) {
    int[] scs = Fp8BlockLayout.scaleCols(q, c0, cn);
    up.byteColsInto(codes, codeOffset, q.weight().data(), q.rows(), q.cols(), c0, cn);
    up.byteColsInto(
        scales,
        scaleOffset,
        q.scales().data(),
        Fp8BlockLayout.blocks(q.rows()),
        4L * Fp8BlockLayout.blocks(q.cols()),
        4L * scs[0],
        4L * scs[1]);
  }

  private void noteDense(long elements) {
    dequantMaxElements = Math.max(dequantMaxElements, elements);
  }

  @Override
  public GpuTensor linearRows(String prefix, int rows, int cols, Slice rowSlice, boolean bias) {
    boolean whole = rowSlice.start() == 0 && rowSlice.count() == rows;
    QuantizedTensor q = quantized(prefix + ".weight", rows, cols);
    DeviceMatrix m;
    if (q != null) {
      m =
          nvfp4(q)
              ? nvfp4Rows(q, rowSlice.start(), rowSlice.count())
              : fp8Rows(q, rowSlice.start(), rowSlice.count());
    } else {
      m =
          whole
              ? up.matrix(prefix + ".weight", rows, cols)
              : up.matrixRows(prefix + ".weight", rows, cols, rowSlice.start(), rowSlice.count());
    }
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
    QuantizedTensor q = quantized(prefix + ".weight", rows, cols);
    DeviceMatrix m;
    if (q != null && nvfp4(q)) {
      int cn = colSlice.count();
      DeviceBuffer codes = up.allocate((long) rows * cn / 2);
      DeviceBuffer scales = up.allocate((long) rows * cn / Nvfp4Layout.GROUP);
      nvfp4ColsInto(codes, 0, scales, 0, q, colSlice.start(), cn);
      noteDense((long) rows * cn);
      m =
          DeviceMatrix.nvfp4(
              codes.ptr(), scales.ptr(), globals(q.globalScale()).ptr(), rows, cn, rows);
    } else if (q != null) {
      int cn = colSlice.count();
      DeviceBuffer codes = up.allocate((long) rows * cn);
      DeviceBuffer scales =
          up.allocate(4L * Fp8BlockLayout.blocks(rows) * Fp8BlockLayout.blocks(cn));
      fp8ColsInto(codes, 0, scales, 0, q, colSlice.start(), cn);
      noteDense((long) rows * cn);
      m = DeviceMatrix.fp8(codes.ptr(), scales.ptr(), rows, cn, rows);
    } else {
      m = up.matrixCols(prefix + ".weight", rows, cols, colSlice.start(), colSlice.count());
    }
    return new GpuTensor.Mat(bias ? m.withBias(up.vector(prefix + ".bias", rows)) : m);
  }

  @Override
  public GpuTensor latentProjection(String name, int rows, int cols, Slice rowSlice) {
    QuantizedTensor q = quantized(name, rows, cols);
    if (q == null) {
      return new GpuTensor.Mat(up.matrixRows(name, rows, cols, rowSlice.start(), rowSlice.count()));
    }
    // The MLA kernels read W_UK / W_UV rows of each head as bf16: dequantized here, this rank's
    // rows only (a small matrix: kv_lora_rank columns).
    int r0 = rowSlice.start();
    int rn = rowSlice.count();
    if (nvfp4(q)) {
      long groups = cols / Nvfp4Layout.GROUP;
      CpuMatrix slice =
          new CpuMatrix(
              q.weight().data().asSlice((long) r0 * (cols / 2), (long) rn * (cols / 2)),
              DType.U8,
              rn,
              cols,
              new Quantization.Nvfp4(
                  q.scales().data().asSlice(r0 * groups, rn * groups), q.globalScale()));
      DeviceBuffer b = up.allocate(2L * rn * cols);
      up.bf16Into(b, 0, Dequantizer.matrix(slice));
      return new GpuTensor.Mat(new DeviceMatrix(b.ptr(), rn, cols));
    }
    int[] sr = Fp8BlockLayout.scaleRows(q, r0, rn);
    long scaleRowBytes = 4L * Fp8BlockLayout.blocks(cols);
    CpuMatrix slice =
        new CpuMatrix(
            q.weight().data().asSlice((long) r0 * cols, (long) rn * cols),
            DType.F8_E4M3,
            rn,
            cols,
            new Quantization.Fp8Block(
                q.scales().data().asSlice(sr[0] * scaleRowBytes, sr[1] * scaleRowBytes),
                Fp8BlockLayout.blocks(cols)));
    DeviceBuffer b = up.allocate(2L * rn * cols);
    up.bf16Into(b, 0, Dequantizer.matrix(slice));
    return new GpuTensor.Mat(new DeviceMatrix(b.ptr(), rn, cols));
  }

  @Override
  public GpuTensor gateUp(String gatePrefix, String upPrefix, int total, int h, Slice part) {
    int i0 = part.start();
    int inter = part.count();
    long from = (long) i0 * h;
    // mlp_bias checkpoints (some V2 variants) bias all three projections; gate|up biases fused too.
    long bias = up.vectorSlicesOrZeros(total, i0, inter, gatePrefix + ".bias", upPrefix + ".bias");
    QuantizedTensor gq = quantized(gatePrefix + ".weight", total, h);
    QuantizedTensor uq = quantized(upPrefix + ".weight", total, h);
    if ((gq == null) != (uq == null) || (gq != null && gq.format() != uq.format())) {
      throw mixed(gq != null ? gq.weight() : uq.weight(), upPrefix + " / " + gatePrefix);
    }
    if (gq != null && nvfp4(gq)) {
      long partCodes = (long) inter * h / 2;
      long partScales = (long) inter * h / Nvfp4Layout.GROUP;
      DeviceBuffer codes = up.allocate(2 * partCodes);
      DeviceBuffer scales = up.allocate(2 * partScales);
      nvfp4RowsInto(codes, 0, scales, 0, gq, i0, inter);
      nvfp4RowsInto(codes, partCodes, scales, partScales, uq, i0, inter);
      noteDense(2L * inter * h);
      DeviceBuffer g = globals(gq.globalScale(), uq.globalScale());
      DeviceMatrix m = DeviceMatrix.nvfp4(codes.ptr(), scales.ptr(), g.ptr(), 2 * inter, h, inter);
      return new GpuTensor.GateUp(m.withBias(bias), inter);
    }
    if (gq != null) {
      long partScaleBytes = 4L * Fp8BlockLayout.blocks(inter) * Fp8BlockLayout.blocks(h);
      DeviceBuffer codes = up.allocate(2L * inter * h);
      DeviceBuffer scales = up.allocate(2 * partScaleBytes);
      fp8RowsInto(codes, 0, scales, 0, gq, i0, inter);
      fp8RowsInto(codes, (long) inter * h, scales, partScaleBytes, uq, i0, inter);
      noteDense(2L * inter * h);
      DeviceMatrix m = DeviceMatrix.fp8(codes.ptr(), scales.ptr(), 2 * inter, h, inter);
      return new GpuTensor.GateUp(m.withBias(bias), inter);
    }
    DeviceBuffer gu = up.allocate(4L * inter * h);
    up.bf16Into(
        gu, 0, up.store().require(gatePrefix + ".weight", total, h), from, (long) inter * h);
    up.bf16Into(
        gu,
        2L * inter * h,
        up.store().require(upPrefix + ".weight", total, h),
        from,
        (long) inter * h);
    return new GpuTensor.GateUp(new DeviceMatrix(gu.ptr(), 2 * inter, h, bias), inter);
  }

  private static ModelLoadException mixed(TensorView t, String what) {
    return new ModelLoadException(
        t.file()
            + ": "
            + what
            + ": the two projections are not stored alike (one quantized and the other not, or in"
            + " two formats); the fused gate/up projections must be stored alike");
  }

  @Override
  public GpuTensor experts(
      ExpertTensors t, int numExperts, int[] ids, int h, int total, Slice part) {
    if (contains(t.fusedGateUp())) {
      TensorView gu = up.store().require(t.fusedGateUp(), numExperts, 2L * total, h);
      if (QuantizedTensors.isQuantizedDtype(gu.dtype())) {
        throw new ModelLoadException(
            gu.file()
                + ": fused expert tensor '"
                + gu.name()
                + "' is quantized ("
                + gu.dtype()
                + "); quantized experts are read in the per-expert layout"
                + " (experts.E.gate_proj.weight with its scales)");
      }
      return bf16Experts(t, numExperts, ids, h, total, part);
    }
    QuantizedTensor first = ids.length > 0 ? quantized(t.gate(ids[0]), total, h) : null;
    if (first != null) {
      return nvfp4(first)
          ? nvfp4Experts(t, ids, h, total, part)
          : fp8Experts(t, ids, h, total, part);
    }
    return bf16Experts(t, numExperts, ids, h, total, part);
  }

  /** Stacked FP8 experts: w13 codes {@code [E, 2I, H]} (parts of I rows), w2 {@code [E, H, I]}. */
  private GpuTensor fp8Experts(ExpertTensors t, int[] ids, int h, int total, Slice part) {
    int e = ids.length;
    int i0 = part.start();
    int inter = part.count();
    long guScaleBytes = 4L * Fp8BlockLayout.blocks(inter) * Fp8BlockLayout.blocks(h);
    long dnScaleBytes = 4L * Fp8BlockLayout.blocks(h) * Fp8BlockLayout.blocks(inter);
    DeviceBuffer w13 = up.allocate(2L * inter * h * e);
    DeviceBuffer s13 = up.allocate(2 * guScaleBytes * e);
    DeviceBuffer w2 = up.allocate((long) h * inter * e);
    DeviceBuffer s2 = up.allocate(dnScaleBytes * e);
    for (int k = 0; k < e; k++) {
      QuantizedTensor g = requireFormat(t.gate(ids[k]), total, h, QuantizedTensor.Format.FP8_BLOCK);
      QuantizedTensor u = requireFormat(t.up(ids[k]), total, h, QuantizedTensor.Format.FP8_BLOCK);
      QuantizedTensor d = requireFormat(t.down(ids[k]), h, total, QuantizedTensor.Format.FP8_BLOCK);
      long codes = 2L * inter * h * k;
      fp8RowsInto(w13, codes, s13, 2 * guScaleBytes * k, g, i0, inter);
      fp8RowsInto(w13, codes + (long) inter * h, s13, guScaleBytes * (2L * k + 1), u, i0, inter);
      fp8ColsInto(w2, (long) h * inter * k, s2, dnScaleBytes * k, d, i0, inter);
    }
    return new GpuTensor.Experts(w13.ptr(), w2.ptr(), s13.ptr(), s2.ptr());
  }

  /**
   * NVFP4 experts: w13 codes {@code [E, 2I, H / 2]} (device order) with e4m3 scales {@code [E, 2I,
   * H / 16]} and globals {@code [2E]} (each expert's gate, then up), w2 {@code [E, H, I / 2]} with
   * scales {@code [E, H, I / 16]} and globals {@code [E]}.
   */
  private GpuTensor nvfp4Experts(ExpertTensors t, int[] ids, int h, int total, Slice part) {
    int e = ids.length;
    int i0 = part.start();
    int inter = part.count();
    int group = Nvfp4Layout.GROUP;
    long partCodes = (long) inter * h / 2;
    long partScales = (long) inter * h / group;
    long downCodes = (long) h * inter / 2;
    long downScales = (long) h * inter / group;
    DeviceBuffer w13 = up.allocate(2 * partCodes * e);
    DeviceBuffer s13 = up.allocate(2 * partScales * e);
    DeviceBuffer w2 = up.allocate(downCodes * e);
    DeviceBuffer s2 = up.allocate(downScales * e);
    float[] g13 = new float[2 * e];
    float[] g2 = new float[e];
    for (int k = 0; k < e; k++) {
      QuantizedTensor g = requireFormat(t.gate(ids[k]), total, h, QuantizedTensor.Format.NVFP4);
      QuantizedTensor u = requireFormat(t.up(ids[k]), total, h, QuantizedTensor.Format.NVFP4);
      QuantizedTensor d = requireFormat(t.down(ids[k]), h, total, QuantizedTensor.Format.NVFP4);
      nvfp4RowsInto(w13, 2 * partCodes * k, s13, 2 * partScales * k, g, i0, inter);
      nvfp4RowsInto(w13, partCodes * (2L * k + 1), s13, partScales * (2L * k + 1), u, i0, inter);
      nvfp4ColsInto(w2, downCodes * k, s2, downScales * k, d, i0, inter);
      g13[2 * k] = g.globalScale();
      g13[2 * k + 1] = u.globalScale();
      g2[k] = d.globalScale();
    }
    return new GpuTensor.Experts(
        w13.ptr(), w2.ptr(), s13.ptr(), s2.ptr(), globals(g13).ptr(), globals(g2).ptr());
  }

  private QuantizedTensor requireFormat(
      String name, int rows, int cols, QuantizedTensor.Format format) {
    QuantizedTensor q = quantized(name, rows, cols);
    if (q == null || q.format() != format) {
      TensorView v = up.store().require(name, rows, cols);
      throw new ModelLoadException(
          v.file()
              + ": expert tensor '"
              + name
              + "' is "
              + (q == null ? v.dtype() : q.format())
              + " while the layer's first expert is "
              + format
              + "; a layer's routed experts must be quantized alike");
    }
    return q;
  }

  private GpuTensor bf16Experts(
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
    return new GpuTensor.Experts(w13.ptr(), w2.ptr(), 0, 0);
  }
}
