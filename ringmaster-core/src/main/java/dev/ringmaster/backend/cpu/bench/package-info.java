/**
 * Microbenchmarks of the CPU backend: memory read bandwidth and weight-streaming matmul speed,
 * reported as tables and JSON so that each result can be read against what the memory allows.
 */
package dev.ringmaster.backend.cpu.bench;
