/**
 * Writes quantized checkpoints from f32/bf16/f16 ones in the formats the public checkpoints use:
 * DeepSeek block-scaled FP8 and ModelOpt NVFP4 ({@link
 * dev.ringmaster.model.quant.CheckpointQuantizer}).
 */
package dev.ringmaster.model.quant;
