/** Tests of the CUDA backend's entry points; those needing a GPU are tagged "gpu". */
package dev.ringmaster.cuda;
