/**
 * How the GPUs of a host are linked (NVLink, or the PCIe path between them) and whether they can
 * read each other's memory, through the driver API and NVML; printed as a matrix like {@code
 * nvidia-smi topo -m}. The allreduce choice depends on it.
 */
package dev.ringmaster.cuda.topology;
