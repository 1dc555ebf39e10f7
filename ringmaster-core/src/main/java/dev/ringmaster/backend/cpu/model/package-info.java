/**
 * The CPU backend's model: {@link dev.ringmaster.backend.cpu.model.CausalLm} runs the architecture
 * ({@code dev.ringmaster.model.arch.DecoderModel}) over the CPU's implementation of the ops
 * interface, with weights mapped from the checkpoint; {@link
 * dev.ringmaster.backend.cpu.model.ParallelCausalLm} runs several ranks of it in one JVM. This is
 * the reference every other backend and rank layout is tested against.
 */
package dev.ringmaster.backend.cpu.model;
