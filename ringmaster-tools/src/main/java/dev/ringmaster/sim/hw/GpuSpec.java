package dev.ringmaster.sim.hw;

import java.util.Map;

/**
 * One GPU of a profile. Rates are datasheet figures; efficiencies and overheads are the constants
 * calibration fits.
 *
 * @param name marketing name
 * @param arch compute capability, e.g. sm_90
 * @param smCount streaming multiprocessors
 * @param memoryBytes device memory usable by the process
 * @param memoryBandwidth datasheet memory bandwidth, bytes/s
 * @param tensorFlops dense tensor-core rate per dtype (bf16, fp8, nvfp4), flop/s; a dtype absent is
 *     not supported natively and runs at the bf16 rate after dequantisation
 * @param gemmMemoryEfficiency fraction of memoryBandwidth a weight-streaming GEMM/GEMV reaches
 * @param moeMemoryEfficiency fraction of memoryBandwidth the grouped expert GEMM reaches
 * @param attentionMemoryEfficiency fraction of memoryBandwidth attention over the KV cache reaches
 * @param computeEfficiency fraction of tensorFlops a compute-bound GEMM reaches
 * @param kernelLaunchUs host launch cost per kernel without CUDA graphs, microseconds
 * @param graphNodeUs cost per kernel inside a replayed CUDA graph, microseconds
 * @param graphLaunchUs cost of launching one graph, microseconds
 * @param stepOverheadUs host work per step (scheduling, input preparation, sampling sync)
 * @param reservedBytes memory taken before the model loads (CUDA context, NCCL, allocator slack)
 * @param decodeTokenLayerUs decode microseconds per token per decoder layer beyond the roofline
 *     (see {@code Category.TOKEN_LATENCY}); 0 until fitted from one-batch steps
 * @param decodeContextTokenLayerNs decode nanoseconds per sequence, cached token and decoder layer
 *     beyond the roofline: attention over a long cache running below its bytes (also in {@code
 *     TOKEN_LATENCY}); 0 until fitted from one-batch steps at several context lengths
 * @param prefillComputeEfficiency fraction of tensorFlops the engine's prefill reaches (its expert
 *     and attention passes run far below cuBLAS-class GEMMs); 0 where not measured: {@code
 *     computeEfficiency} then serves
 * @param mlaAbsorbFlops flop/s the engine's absorbed-MLA query and output projections ({@code
 *     rm_mla_absorb_q}, {@code rm_mla_out_v}, CUDA cores) reach over a prefill chunk; a forward
 *     with prompt tokens runs them over its decode rows and absorbed prompt runs; 0 where not
 *     measured: that cost is then not charged
 */
public record GpuSpec(
    String name,
    String arch,
    int smCount,
    double memoryBytes,
    double memoryBandwidth,
    Map<String, Double> tensorFlops,
    double gemmMemoryEfficiency,
    double moeMemoryEfficiency,
    double attentionMemoryEfficiency,
    double computeEfficiency,
    double kernelLaunchUs,
    double graphNodeUs,
    double graphLaunchUs,
    double stepOverheadUs,
    double reservedBytes,
    double decodeTokenLayerUs,
    double decodeContextTokenLayerNs,
    double prefillComputeEfficiency,
    double mlaAbsorbFlops) {

  /**
   * The compute efficiency of a prefill forward (prompt chunks, MLA expanded): {@code
   * prefillComputeEfficiency} where the profile measured it, else {@code computeEfficiency}.
   */
  public double prefillEfficiency() {
    return prefillComputeEfficiency > 0 ? prefillComputeEfficiency : computeEfficiency;
  }

  /** Tensor rate for a dtype, falling back to bf16 when the dtype is not native. */
  public double flopsFor(String dtype) {
    Double r = tensorFlops.get(dtype);
    return r != null ? r : tensorFlops.get("bf16");
  }

  /** Whether the dtype runs natively on the tensor cores. */
  public boolean supportsDtype(String dtype) {
    return tensorFlops.containsKey(dtype);
  }

  /** Copy with another per-token decode latency (the per-context-token latency is kept). */
  public GpuSpec withDecodeTokenLayerUs(double us) {
    return withDecodeLatency(us, decodeContextTokenLayerNs);
  }

  /** Copy with other decode latency terms, per token and per cached token (see the fields). */
  public GpuSpec withDecodeLatency(double tokenLayerUs, double contextTokenLayerNs) {
    return new GpuSpec(
        name,
        arch,
        smCount,
        memoryBytes,
        memoryBandwidth,
        tensorFlops,
        gemmMemoryEfficiency,
        moeMemoryEfficiency,
        attentionMemoryEfficiency,
        computeEfficiency,
        kernelLaunchUs,
        graphNodeUs,
        graphLaunchUs,
        stepOverheadUs,
        reservedBytes,
        tokenLayerUs,
        contextTokenLayerNs,
        prefillComputeEfficiency,
        mlaAbsorbFlops);
  }

  /**
   * Decode microseconds beyond the roofline for {@code sequences} sequences of {@code contextLen}
   * cached tokens over {@code layers} layers: the per-token and the per-context-token latency.
   */
  public double decodeLatencyUs(int sequences, int contextLen, int layers) {
    return (double) sequences
        * layers
        * (decodeTokenLayerUs + contextLen * decodeContextTokenLayerNs * 1e-3);
  }

  /** Copy with other calibrated constants (the decode latency terms are kept). */
  public GpuSpec withConstants(
      double gemmEff,
      double moeEff,
      double attnEff,
      double computeEff,
      double launchUs,
      double nodeUs,
      double graphUs,
      double stepUs) {
    return new GpuSpec(
        name,
        arch,
        smCount,
        memoryBytes,
        memoryBandwidth,
        tensorFlops,
        gemmEff,
        moeEff,
        attnEff,
        computeEff,
        launchUs,
        nodeUs,
        graphUs,
        stepUs,
        reservedBytes,
        decodeTokenLayerUs,
        decodeContextTokenLayerNs,
        prefillComputeEfficiency,
        mlaAbsorbFlops);
  }
}
