/**
 * Hardware profiles (JSON data files with their sources) and the models built on them: per-kernel
 * time from FLOPs and bytes, the GPU-pair topology, and alpha-beta models of collectives per
 * algorithm and protocol, including peer-memory kernels contending for shared PCIe links.
 */
package dev.ringmaster.sim.hw;
