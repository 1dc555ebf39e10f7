/**
 * Ringmaster's performance simulator: predicts decode and prefill step time, memory and KV capacity
 * of a serving configuration on hardware described by a profile, explains where the time goes, and
 * fits the profile's constants to measurements taken on the user's own machine.
 *
 * <p>Subpackages: {@code model} counts FLOPs and bytes of every operator from a config.json; {@code
 * hw} holds hardware profiles and the collective models; {@code serve} turns a serving
 * configuration into step times and a memory plan; {@code calibrate} fits profile constants by
 * least squares; {@code report} formats predictions and sweep plots.
 */
package dev.ringmaster.sim;
