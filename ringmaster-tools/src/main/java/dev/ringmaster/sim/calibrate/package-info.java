/**
 * Calibration: reads this host's measurements ({@code bench collectives} and {@code bench
 * one-batch} output, schema in {@link dev.ringmaster.sim.calibrate.Measurements}) and fits a
 * profile's constants (kernel efficiencies, launch and graph overheads, collective alpha/beta) by
 * least squares into a profile for this machine.
 */
package dev.ringmaster.sim.calibrate;
