package dev.ringmaster.cuda.model;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.model.arch.DecoderModel;
import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.model.ops.ModelWeights;
import dev.ringmaster.model.weights.WeightStore;
import java.util.List;

/**
 * A rank's weights on the device, uploaded by asking the architecture's loader ({@link
 * DecoderModel#load}) for every tensor through a {@link GpuWeightSource}: its heads (rows of q_b /
 * q_proj and kv_b, columns of o_proj), its share of every MLP's intermediate dimension, and either
 * its share of every expert or whole experts of its own range; the rest replicated.
 */
final class GpuWeights implements AutoCloseable {
  final ModelWeights<GpuTensor> model;
  final long bytes;

  /** Elements of the largest FP8 matrix outside the routed experts (0: none is FP8). */
  final long dequantMaxElements;

  private final List<DeviceBuffer> buffers;

  private GpuWeights(
      ModelWeights<GpuTensor> model,
      long bytes,
      long dequantMaxElements,
      List<DeviceBuffer> buffers) {
    this.model = model;
    this.bytes = bytes;
    this.dequantMaxElements = dequantMaxElements;
    this.buffers = buffers;
  }

  /**
   * Uploads {@code shard}'s slice of every weight of {@code store} (GPU thread only), showing
   * progress where {@code report}.
   */
  static GpuWeights upload(
      ModelConfig cfg, WeightStore store, CudaStream stream, RankShard shard, boolean report) {
    // Progress counts checkpoint bytes read (multi-token-prediction layers, if any, are skipped).
    try (WeightUploader up = new WeightUploader(store, stream, store.totalBytes(), report)) {
      try {
        GpuWeightSource source = new GpuWeightSource(up, cfg.quantization());
        ModelWeights<GpuTensor> w = DecoderModel.of(cfg).load(source, shard.context(), null);
        return new GpuWeights(w, up.deviceBytes(), source.dequantMaxElements(), up.buffers());
      } catch (RuntimeException e) {
        up.buffers().forEach(DeviceBuffer::close);
        throw e;
      }
    }
  }

  @Override
  public void close() {
    buffers.forEach(DeviceBuffer::close);
  }
}
