/** Kernel tests: each kernel against the CPU reference on fresh random inputs. */
package dev.ringmaster.cuda.kernels;
