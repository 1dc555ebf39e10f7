package dev.ringmaster.model.weights;

import dev.ringmaster.backend.DType;
import dev.ringmaster.model.ModelLoadException;
import dev.ringmaster.model.config.QuantizationConfig;
import dev.ringmaster.model.config.QuantizationConfig.Method;
import dev.ringmaster.model.config.QuantizationConfigParser;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Finds the quantized form of a linear weight in a checkpoint and checks it against the
 * quantization settings: the weight's dtype says whether it is quantized; its scales must be
 * present with the exact shapes and dtypes of the format; a module the settings exclude must not be
 * quantized. Every failure names the file, the tensor and what is wrong.
 */
public final class QuantizedTensors {
  private static final ValueLayout.OfFloat F32_LE =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private QuantizedTensors() {}

  /** Whether a tensor's dtype is one of the quantized storage types. */
  public static boolean isQuantizedDtype(DType d) {
    return d == DType.F8_E4M3 || d == DType.U8;
  }

  /**
   * The quantized weight {@code weightName} ({@code MODULE.weight}) of logical shape {@code [rows,
   * cols]}, or null when it is stored as f32, bf16 or f16 (its shape is then the caller's to
   * check).
   *
   * @throws ModelLoadException when the weight is missing, or quantized inconsistently with {@code
   *     q} or with its scales
   */
  public static QuantizedTensor find(
      WeightStore store, QuantizationConfig q, String weightName, int rows, int cols) {
    TensorView w = store.get(weightName);
    if (w == null) {
      store.require(weightName, rows, cols); // the missing-tensor message
    }
    if (!isQuantizedDtype(w.dtype())) {
      return null;
    }
    String module =
        weightName.endsWith(".weight")
            ? weightName.substring(0, weightName.length() - ".weight".length())
            : weightName;
    if (!q.quantized()) {
      throw new ModelLoadException(
          w.file()
              + ": tensor '"
              + weightName
              + "' is stored as "
              + w.dtype()
              + " but config.json has no quantization_config (and there is no"
              + " hf_quant_config.json); a quantized checkpoint must say how it is quantized");
    }
    if (q.excludes(module)) {
      throw new ModelLoadException(
          w.file()
              + ": tensor '"
              + weightName
              + "' is quantized ("
              + w.dtype()
              + ") but module '"
              + module
              + "' is excluded from quantization by "
              + q.source()
              + "; the checkpoint and its exclusion list disagree");
    }
    if (w.dtype() == DType.U8) {
      return nvfp4(store, q, w, module, rows, cols);
    }
    TensorView blockScales = store.get(module + ".weight_scale_inv");
    TensorView tensorScale = store.get(module + ".weight_scale");
    if (q.method() == Method.FP8_BLOCK) {
      if (blockScales == null) {
        throw missingScale(w, module + ".weight_scale_inv", "FP8 block-scaled");
      }
      checkShape(w, rows, cols);
      long[] want = {ceilDiv(rows, q.blockRows()), ceilDiv(cols, q.blockCols())};
      checkScale(blockScales, DType.F32, want, "one f32 scale per 128x128 block");
      return new QuantizedTensor(QuantizedTensor.Format.FP8_BLOCK, w, blockScales, 1f, rows, cols);
    }
    if (tensorScale == null) {
      throw missingScale(w, module + ".weight_scale", "per-tensor FP8");
    }
    checkShape(w, rows, cols);
    return new QuantizedTensor(
        QuantizedTensor.Format.FP8_TENSOR, w, null, scalar(tensorScale), rows, cols);
  }

  private static QuantizedTensor nvfp4(
      WeightStore store, QuantizationConfig q, TensorView w, String module, int rows, int cols) {
    if (q.method() != Method.NVFP4) {
      throw new ModelLoadException(
          w.file()
              + ": tensor '"
              + w.name()
              + "' is packed U8 (NVFP4) but "
              + q.source()
              + " describes "
              + q.method()
              + " quantization");
    }
    int group = QuantizationConfigParser.NVFP4_GROUP;
    if (cols % group != 0) {
      throw new ModelLoadException(
          w.file()
              + ": tensor '"
              + w.name()
              + "' has "
              + cols
              + " input features, not a multiple of the NVFP4 group size 16");
    }
    if (!Arrays.equals(w.shape(), new long[] {rows, cols / 2})) {
      throw new ModelLoadException(
          w.file()
              + ": NVFP4 tensor '"
              + w.name()
              + "' has shape "
              + w.shapeString()
              + ", expected "
              + Arrays.toString(new long[] {rows, cols / 2})
              + " (two e2m1 codes per byte) for a ["
              + rows
              + ", "
              + cols
              + "] weight");
    }
    TensorView scales = store.get(module + ".weight_scale");
    if (scales == null) {
      throw missingScale(w, module + ".weight_scale", "NVFP4");
    }
    checkScale(scales, DType.F8_E4M3, new long[] {rows, cols / group}, "one e4m3 scale per 16");
    TensorView scale2 = store.get(module + ".weight_scale_2");
    if (scale2 == null) {
      throw missingScale(w, module + ".weight_scale_2", "NVFP4");
    }
    return new QuantizedTensor(QuantizedTensor.Format.NVFP4, w, scales, scalar(scale2), rows, cols);
  }

  private static void checkShape(TensorView w, int rows, int cols) {
    if (!Arrays.equals(w.shape(), new long[] {rows, cols})) {
      throw new ModelLoadException(
          w.file()
              + ": tensor '"
              + w.name()
              + "' has shape "
              + w.shapeString()
              + ", expected "
              + Arrays.toString(new long[] {rows, cols})
              + " from config.json");
    }
  }

  private static void checkScale(TensorView s, DType dtype, long[] shape, String what) {
    if (s.dtype() != dtype || !Arrays.equals(s.shape(), shape)) {
      throw new ModelLoadException(
          s.file()
              + ": scale tensor '"
              + s.name()
              + "' is "
              + s.dtype()
              + " "
              + s.shapeString()
              + ", expected "
              + dtype
              + " "
              + Arrays.toString(shape)
              + " ("
              + what
              + ")");
    }
  }

  /** A per-tensor f32 scale, stored with shape {@code []} or {@code [1]}. */
  private static float scalar(TensorView s) {
    if (s.dtype() != DType.F32 || s.numel() != 1 || s.shape().length > 1) {
      throw new ModelLoadException(
          s.file()
              + ": scale tensor '"
              + s.name()
              + "' is "
              + s.dtype()
              + " "
              + s.shapeString()
              + ", expected one F32 value (shape [] or [1])");
    }
    float v = s.data().get(F32_LE, 0);
    if (!(v > 0f) || Float.isInfinite(v)) {
      throw new ModelLoadException(
          s.file() + ": scale tensor '" + s.name() + "' is " + v + "; a scale must be positive");
    }
    return v;
  }

  private static ModelLoadException missingScale(TensorView w, String scaleName, String format) {
    return new ModelLoadException(
        w.file()
            + ": tensor '"
            + w.name()
            + "' is "
            + w.dtype()
            + " ("
            + format
            + ") but its scale '"
            + scaleName
            + "' is missing from the checkpoint");
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
