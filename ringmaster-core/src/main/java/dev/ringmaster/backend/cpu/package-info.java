/**
 * The CPU backend: the reference implementation of the ops, vectorised with the Vector API.
 *
 * <p>{@link dev.ringmaster.backend.cpu.CpuMatmul} multiplies activations by weight matrices that
 * stay in their on-disk format ({@link dev.ringmaster.backend.cpu.CpuMatrix}, f32, bf16 or f16 in a
 * possibly memory-mapped {@link java.lang.foreign.MemorySegment}; or FP8 and NVFP4 codes with their
 * {@link dev.ringmaster.backend.cpu.Quantization} scales, decoded by {@link
 * dev.ringmaster.backend.cpu.Dequantizer}); bf16 matrices are also packed once for the kernels, a
 * lane per row, so each output is one multiply-add chain). A {@link
 * dev.ringmaster.backend.cpu.CpuKernelContext}, made when a model loads and passed to its layers,
 * fixes the vector width the kernels are specialised for and owns the persistent pool of worker
 * threads. {@link dev.ringmaster.backend.cpu.CostedLoop} runs other parallel loops (the attention
 * cores) on a context's pool only where they repay a region, and {@link
 * dev.ringmaster.backend.cpu.VectorMath} holds the attention's vector dot products, sums of scaled
 * rows and softmax, each with a fixed summation order. Whether a product or loop goes parallel is
 * decided from timings on this machine (package-private {@code ParallelCostModel}), leaving out
 * those taken while the JIT compiled.
 */
package dev.ringmaster.backend.cpu;
