/**
 * Continuous batching: one engine thread owns the model and runs steps that mix chunked prefill
 * with decode; requests join and leave the running batch at step boundaries; KV cache memory is
 * accounted in fixed-size blocks.
 *
 * <p>Callers {@link dev.ringmaster.engine.batch.BatchEngine#submit submit} an {@link
 * dev.ringmaster.engine.batch.EngineRequest} and receive its tokens through a {@link
 * dev.ringmaster.engine.batch.TokenListener} called on the engine thread. Request threads never
 * touch the model or the caches.
 */
package dev.ringmaster.engine.batch;
