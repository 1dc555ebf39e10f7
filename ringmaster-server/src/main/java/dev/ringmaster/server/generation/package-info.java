/**
 * Turns engine token streams into client-visible text: incremental detokenization, stop strings
 * (never streaming a partial match), per-choice events for streaming and collected results for
 * plain responses, and the latency metrics of each request.
 */
package dev.ringmaster.server.generation;
