/**
 * Low-precision number formats of quantized checkpoints and the quantizers that write them: FP8
 * e4m3 ({@link dev.ringmaster.backend.quant.Fp8E4m3}), FP4 e2m1 ({@link
 * dev.ringmaster.backend.quant.E2m1}), DeepSeek's 128x128 block-scaled FP8 and ModelOpt's NVFP4
 * ({@link dev.ringmaster.backend.quant.Quantizers}). Decoding is exact; encoding rounds to nearest,
 * ties to even, and saturates, as PyTorch's casts after the quantizers' clamps do.
 */
package dev.ringmaster.backend.quant;
