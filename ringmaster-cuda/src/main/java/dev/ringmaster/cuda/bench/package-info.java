/** Micro-benchmarks of the CUDA kernels, run on a GPU machine to record their speed. */
package dev.ringmaster.cuda.bench;
