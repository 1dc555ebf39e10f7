package dev.ringmaster.sim.calibrate;

import java.util.List;

/**
 * The measurement file calibration reads (JSON, snake_case). {@code bench collectives} writes
 * {@code collectives}; {@code bench one-batch} writes {@code kernels} (its per-kernel breakdown)
 * and {@code steps}. Any list may be empty or absent; a constant with no samples keeps the base
 * profile's value.
 *
 * <pre>{@code
 * {
 *   "host": "box-1", "gpu": "NVIDIA RTX PRO 6000 ...", "gpu_count": 8,
 *   "collectives": [
 *     {"op": "allreduce", "algorithm": "nccl", "protocol": "LL", "ranks": 8,
 *      "bytes": 12288, "time_us": 25.1}
 *   ],
 *   "kernels": [
 *     {"name": "layer.attn.q_b_proj", "kind": "gemm", "dtype": "bf16",
 *      "flops": 2.6e7, "bytes": 1.3e7, "time_us": 9.8}
 *   ],
 *   "steps": [
 *     {"batch": 1, "context_len": 1024, "cuda_graph": true, "kernels": 1520,
 *      "gpu_busy_us": 9100, "step_time_us": 11300, "layers": 61}
 *   ]
 * }
 * }</pre>
 *
 * @param host where it was measured
 * @param gpu GPU name as the driver reports it
 * @param gpuCount GPUs in the box
 * @param collectives collective timings
 * @param kernels per-kernel GPU times of a one-batch run
 * @param steps whole-step times of one-batch runs
 */
public record Measurements(
    String host,
    String gpu,
    int gpuCount,
    List<CollectiveSample> collectives,
    List<KernelSample> kernels,
    List<StepSample> steps) {

  /** Lists default to empty. */
  public Measurements {
    collectives = collectives == null ? List.of() : List.copyOf(collectives);
    kernels = kernels == null ? List.of() : List.copyOf(kernels);
    steps = steps == null ? List.of() : List.copyOf(steps);
  }

  /**
   * One collective timing (mean over iterations, CUDA-graph or back-to-back, as bench runs it).
   *
   * @param op allreduce, allgather or alltoall
   * @param algorithm nccl, ring, tree, oneshot or twoshot
   * @param protocol NCCL protocol forced for the run (LL, LL128, Simple); required for NCCL
   *     samples, since the fit is per algorithm/protocol
   * @param ranks ranks taking part
   * @param bytes message bytes per rank (allreduce: the buffer; alltoall: all a rank sends)
   * @param timeUs microseconds per call
   */
  public record CollectiveSample(
      String op, String algorithm, String protocol, int ranks, double bytes, double timeUs) {}

  /**
   * One kernel's GPU time from a one-batch run's per-kernel breakdown.
   *
   * @param name operator name
   * @param kind gemm (dense weights), moe (routed experts) or attention
   * @param dtype tensor-core dtype (bf16, fp8, nvfp4)
   * @param flops floating-point operations of the kernel
   * @param bytes bytes it reads and writes
   * @param timeUs GPU microseconds
   * @param launches kernels the sample's time covers (a group of the engine's ops), 0 where unknown
   */
  public record KernelSample(
      String name,
      String kind,
      String dtype,
      double flops,
      double bytes,
      double timeUs,
      int launches) {}

  /**
   * One decode step's wall time beside its GPU busy time.
   *
   * @param batch sequences
   * @param contextLen KV length
   * @param cudaGraph whether the step replayed a graph
   * @param kernels kernels launched in the step
   * @param gpuBusyUs sum of kernel GPU times at the roofline (without the per-token latency)
   * @param stepTimeUs wall time of the step
   * @param layers decoder layers of the model; 0 when unknown, and then the sample does not take
   *     part in fitting the per-token decode latency
   * @param hostUs the step's wall time less the GPU time of the same step replayed from its graph,
   *     where a one-rank run measured both (NaN otherwise): the host's share of a step, which the
   *     fit cannot tell apart from the graph-node cost when every sample launches about as many
   *     kernels
   */
  public record StepSample(
      int batch,
      int contextLen,
      boolean cudaGraph,
      int kernels,
      double gpuBusyUs,
      double stepTimeUs,
      int layers,
      double hostUs) {

    /** A sample without a measured host share. */
    public StepSample(
        int batch,
        int contextLen,
        boolean cudaGraph,
        int kernels,
        double gpuBusyUs,
        double stepTimeUs,
        int layers) {
      this(batch, contextLen, cudaGraph, kernels, gpuBusyUs, stepTimeUs, layers, Double.NaN);
    }

    /** Decode tokens times layers: what the per-token decode latency multiplies. */
    public double tokenLayers() {
      return (double) batch * layers;
    }

    /**
     * Thousands of (sequence, cached token, layer) triples: what the per-context-token decode
     * latency, in nanoseconds, multiplies to give microseconds.
     */
    public double contextTokenLayersK() {
      return (double) batch * contextLen * layers * 1e-3;
    }
  }
}
