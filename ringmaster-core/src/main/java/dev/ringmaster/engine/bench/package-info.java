/** Engine-level benchmarks that run a model directly, without a server. */
package dev.ringmaster.engine.bench;
