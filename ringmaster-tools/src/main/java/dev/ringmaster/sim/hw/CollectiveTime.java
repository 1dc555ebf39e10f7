package dev.ringmaster.sim.hw;

/**
 * Predicted time of one collective call.
 *
 * @param timeUs microseconds
 * @param how the algorithm/protocol that gives this time
 */
public record CollectiveTime(double timeUs, String how) {}
