/**
 * Model architectures written once as a forward pass over a batch of tokens: DeepSeek-V2/V3
 * (multi-head latent attention, shared + routed experts) and Qwen3-MoE (grouped-query attention).
 */
package dev.ringmaster.model.arch;
