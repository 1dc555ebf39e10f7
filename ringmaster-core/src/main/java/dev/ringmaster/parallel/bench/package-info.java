/**
 * Collective benchmarks in the manner of nccl-tests: time each operation over a range of message
 * sizes (median of many iterations after warm-up), check the result, and report algorithm and bus
 * bandwidth as a table, as JSON and as a PNG plot.
 */
package dev.ringmaster.parallel.bench;
