/**
 * Calibration: reads this host's measurements (the native schema in {@link
 * dev.ringmaster.sim.calibrate.Measurements}, or {@code bench collectives} and {@code bench
 * one-batch} JSON as printed, recognised by {@link dev.ringmaster.sim.calibrate.MeasurementsIo})
 * and fits a profile's constants (kernel efficiencies, launch and graph overheads, collective
 * alpha/beta) by least squares into a profile for this machine.
 */
package dev.ringmaster.sim.calibrate;
