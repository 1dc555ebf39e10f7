/**
 * DeepSeek-V2/V3 (MLA) models on one GPU: weights uploaded as bf16, a paged latent KV cache sized
 * by a memory planner, batched chunked prefill and decode steps replayed from CUDA graphs per batch
 * size. The structure mirrors the CPU reference ({@code dev.ringmaster.backend.cpu.model.CausalLm})
 * layer by layer and op by op ({@link dev.ringmaster.cuda.model.GpuOps}), so that both can later be
 * written once against a shared ops interface.
 */
package dev.ringmaster.cuda.model;
