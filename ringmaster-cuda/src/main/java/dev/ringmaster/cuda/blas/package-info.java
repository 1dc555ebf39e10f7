/**
 * FFM bindings to cuBLAS for bf16 GEMMs with f32 accumulation, one handle per stream with a fixed
 * workspace so the products can be captured into CUDA graphs.
 */
package dev.ringmaster.cuda.blas;
