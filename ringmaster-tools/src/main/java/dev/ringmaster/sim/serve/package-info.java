/**
 * The serving side of the simulator: a serving configuration (TP/EP, allreduce, CUDA graphs,
 * speculative decoding with an eager or graph-captured verify, batch, context) turned into decode
 * and prefill step times with a breakdown, the collectives each step issues, and a memory plan with
 * the KV capacity it leaves; and a serving-level model ({@link
 * dev.ringmaster.sim.serve.ServingSimulator}) that replays the engine's scheduler over those step
 * times for a {@code bench serve} workload.
 */
package dev.ringmaster.sim.serve;
