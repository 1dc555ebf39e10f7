/**
 * The serving side of the simulator: a serving configuration (TP/EP, allreduce, CUDA graphs,
 * speculative decoding, batch, context) turned into decode and prefill step times with a breakdown,
 * the collectives each step issues, and a memory plan with the KV capacity it leaves.
 */
package dev.ringmaster.sim.serve;
