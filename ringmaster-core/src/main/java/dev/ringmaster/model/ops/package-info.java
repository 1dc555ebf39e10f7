/**
 * The operations interface every architecture is written against, and the weights it passes to
 * them. An architecture ({@code dev.ringmaster.model.arch}) is one forward pass over a step's
 * tokens calling {@link dev.ringmaster.model.ops.ModelOps}; a backend (CPU, CUDA) implements the
 * ops over its own activation buffers and weight handles, and chooses its kernels inside them.
 * Weights come from the checkpoint through a {@link dev.ringmaster.model.ops.WeightSource}, which
 * the architecture asks for each tensor by name, shape and this rank's slice: the one place
 * checkpoint names are written.
 */
package dev.ringmaster.model.ops;
