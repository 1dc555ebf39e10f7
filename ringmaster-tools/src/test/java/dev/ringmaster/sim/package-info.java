/** Tests of the simulator and their helpers. */
package dev.ringmaster.sim;
