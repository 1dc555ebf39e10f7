/**
 * The model side of the simulator: a normalised {@link dev.ringmaster.sim.model.ModelShape} read
 * from any supported config.json, the weight inventory with parameter counts and bytes per weight
 * format, and per-operator FLOPs and bytes for a step of a given batch and context length.
 */
package dev.ringmaster.sim.model;
