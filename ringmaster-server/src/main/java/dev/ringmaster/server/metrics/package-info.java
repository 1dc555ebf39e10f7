/**
 * Prometheus metrics with SGLang's names under a {@code ringmaster:} prefix: token counters,
 * latency histograms (time to first token, inter-token, end to end), running and queued requests,
 * KV cache usage, and where the engine's step time goes (host, batch building, forward).
 */
package dev.ringmaster.server.metrics;
