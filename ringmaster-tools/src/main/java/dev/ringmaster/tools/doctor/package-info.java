/**
 * {@code ringmaster doctor}: what this host is (CPU, memory, Java; GPUs, driver, libraries and
 * topology as a probe found them) and a verdict per engine feature ({@code ok}, {@code unsupported
 * (hardware)}, {@code unsupported (software version)}, {@code untested}) with a one-line reason.
 * The verdicts are pure functions of {@link dev.ringmaster.tools.doctor.HostFacts} and {@link
 * dev.ringmaster.tools.doctor.GpuFacts}, so every path is tested with made-up facts; the command
 * line fills the facts from the CUDA probes.
 */
package dev.ringmaster.tools.doctor;
