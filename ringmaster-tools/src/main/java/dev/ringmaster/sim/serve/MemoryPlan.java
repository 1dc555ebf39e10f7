package dev.ringmaster.sim.serve;

/**
 * Where one GPU's memory goes, in bytes, and the KV capacity left.
 *
 * @param totalBytes device memory
 * @param reservedBytes CUDA context, NCCL and allocator slack
 * @param weightsBytes this rank's weights
 * @param activationsBytes prefill activation workspace
 * @param cudaGraphBytes memory held by captured graphs
 * @param cudaGraphCount graphs captured
 * @param a2aBufferBytes all-to-all dispatch/combine buffers
 * @param kvBytes KV cache pool
 * @param kvBytesPerToken bytes one token of one sequence takes on this rank
 * @param kvCapacityTokens tokens the pool holds (all sequences together)
 * @param maxBatchAtContext sequences of the configured context length that fit
 */
public record MemoryPlan(
    double totalBytes,
    double reservedBytes,
    double weightsBytes,
    double activationsBytes,
    double cudaGraphBytes,
    int cudaGraphCount,
    double a2aBufferBytes,
    double kvBytes,
    double kvBytesPerToken,
    long kvCapacityTokens,
    long maxBatchAtContext) {

  /** Whether the weights and buffers fit with room for any KV cache. */
  public boolean fits() {
    return kvBytes > 0;
  }
}
