/** The CPU backend, the reference every other backend is tested against: f32 compute. */
package dev.ringmaster.backend.cpu;
