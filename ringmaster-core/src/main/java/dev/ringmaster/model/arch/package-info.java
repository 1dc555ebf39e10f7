/**
 * Model architectures, written once for every backend and rank layout as a forward pass over the
 * ops interface ({@code dev.ringmaster.model.ops}): {@link dev.ringmaster.model.arch.DecoderModel}
 * is the decoder every family shares, and each family adds its attention block (DeepSeek-V2/V3's
 * multi-head latent attention, Qwen3-MoE's grouped-query attention). Also the rank layout that
 * slices a checkpoint (parallel configuration, expert placement, shard checks) and the rotary
 * tables.
 */
package dev.ringmaster.model.arch;
