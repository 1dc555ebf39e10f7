/** Shared helpers of the GPU tests: the GPU thread, device scopes, random data, comparisons. */
package dev.ringmaster.cuda.testing;
