/**
 * Continuous batching: one engine thread owns the schedule and every cache and runs steps that mix
 * chunked prefill with decode; requests join and leave the running batch at step boundaries; KV
 * cache memory is accounted in fixed-size blocks. With the overlap schedule the forward runs on a
 * model thread while the engine thread plans and builds the next step.
 *
 * <p>Callers {@link dev.ringmaster.engine.batch.BatchEngine#submit submit} an {@link
 * dev.ringmaster.engine.batch.EngineRequest} and receive its tokens through a {@link
 * dev.ringmaster.engine.batch.TokenListener} called on the engine thread. Request threads never
 * touch the model or the caches. {@link dev.ringmaster.engine.batch.ServingDefaults} derives the
 * scheduling limits a server uses when no flag sets them.
 */
package dev.ringmaster.engine.batch;
