package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.config.QuantizationConfig;

/** What the GPU backend runs, checked from a model's configuration before anything loads. */
final class GpuModelSupport {
  private GpuModelSupport() {}

  /**
   * Refuses, before anything is loaded, what the GPU backend does not run: quantization methods
   * other than DeepSeek FP8 block-scaled (128x128 blocks) and ModelOpt NVFP4 (those run on the CPU
   * backend), indexer shapes its sparse attention kernels cannot take and GQA shapes its kernels
   * cannot take.
   */
  static void check(ModelConfig cfg) {
    QuantizationConfig q = cfg.quantization();
    QuantizationConfig.Method method = q.method();
    if (q.quantized()
        && method != QuantizationConfig.Method.FP8_BLOCK
        && method != QuantizationConfig.Method.NVFP4) {
      throw new IllegalArgumentException(
          "quantized checkpoints ("
              + method
              + ", "
              + q.source()
              + ") run on the CPU backend only; the GPU backend runs DeepSeek FP8 block-scaled"
              + " and ModelOpt NVFP4 checkpoints; use --device cpu");
    }
    if (method == QuantizationConfig.Method.FP8_BLOCK
        && (q.blockRows() != Fp8BlockLayout.BLOCK || q.blockCols() != Fp8BlockLayout.BLOCK)) {
      throw new IllegalArgumentException(
          q.source()
              + ": weight_block_size ["
              + q.blockRows()
              + ", "
              + q.blockCols()
              + "]: the GPU's FP8 kernels take 128x128 blocks only; use --device cpu");
    }
    if (cfg.architecture().usesSparseAttention()) {
      DsaKernels.checkIndexerShape(
          cfg.sparseAttention().indexHeads(), cfg.sparseAttention().indexHeadDim());
    }
    if (!cfg.architecture().usesMla()) {
      GpuGqaAttention.checkShape(cfg);
    }
  }

  /**
   * Refuses what the tensor-parallel GPU path does not run beyond {@link #check}: DeepSeek Sparse
   * Attention runs on one GPU only.
   */
  static void checkParallel(ModelConfig cfg) {
    if (cfg.architecture().usesSparseAttention()) {
      throw new IllegalArgumentException(
          cfg.architecture().modelType()
              + " uses DeepSeek Sparse Attention, which the GPU backend runs on one GPU only:"
              + " use --tp-size 1 (and no --ep-size), or --device cpu for tensor parallelism");
    }
  }
}
