/**
 * The CUDA backend's model: {@link dev.ringmaster.cuda.model.CudaCausalLm} runs the architecture
 * ({@code dev.ringmaster.model.arch.DecoderModel}, the same code as the CPU's) over the GPU's
 * implementation of the ops interface ({@link dev.ringmaster.cuda.model.GpuModelOps}, with MLA, GQA
 * and MoE ops that choose their kernels), with weights uploaded as bf16 through the architecture's
 * loader, a paged KV cache sized by a memory planner, batched chunked prefill and decode steps
 * replayed from CUDA graphs per batch size; {@link dev.ringmaster.cuda.model.TensorParallelCudaLm}
 * runs tensor/expert-parallel ranks of it over NCCL.
 */
package dev.ringmaster.cuda.model;
