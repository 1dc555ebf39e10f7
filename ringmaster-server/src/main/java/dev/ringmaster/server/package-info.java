/**
 * The HTTP server: OpenAI-compatible endpoints, SGLang-style native endpoints and Prometheus
 * metrics over the {@link dev.ringmaster.engine.batch.BatchEngine}. It only translates HTTP to
 * engine requests and back; the engine owns time and memory.
 */
package dev.ringmaster.server;
