/** The engine: owns time and memory — generation loops, sampling, KV caches. */
package dev.ringmaster.engine;
