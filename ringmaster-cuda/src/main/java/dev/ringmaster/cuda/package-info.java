/**
 * The CUDA backend: {@link dev.ringmaster.cuda.CudaRuntime#probe()} says whether a GPU can be used
 * and what is missing, and a {@link dev.ringmaster.cuda.GpuThread} owns each GPU's context.
 */
package dev.ringmaster.cuda;
