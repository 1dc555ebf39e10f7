/**
 * Ringmaster's CUDA kernels: the fatbin built from {@code src/main/cuda} and typed launches with
 * their workspaces. Weights bf16, activations f32, accumulation f32.
 */
package dev.ringmaster.cuda.kernels;
