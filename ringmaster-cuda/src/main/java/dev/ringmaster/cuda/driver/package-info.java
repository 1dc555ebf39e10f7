/**
 * Hand-written FFM bindings to the CUDA driver API ({@code libcuda.so.1}) and small owning
 * wrappers: device and pinned host memory, streams, events, modules, kernels with preallocated
 * argument blocks, and graphs made by stream capture. Device pointers and handles are {@code
 * long}s; every status is checked and turned into a {@link
 * dev.ringmaster.cuda.driver.CudaException}.
 */
package dev.ringmaster.cuda.driver;
