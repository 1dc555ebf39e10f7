/** Safetensors checkpoints (single file or sharded), memory-mapped through the FFM API. */
package dev.ringmaster.model.weights;
