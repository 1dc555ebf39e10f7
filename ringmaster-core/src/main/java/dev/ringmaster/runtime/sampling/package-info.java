/**
 * Choosing next tokens from logits, on any backend: {@link
 * dev.ringmaster.runtime.sampling.SamplingBatch} holds the per-row parameters and token histories
 * of one step in primitive arrays (the layout a GPU copies into fixed device buffers), {@link
 * dev.ringmaster.runtime.sampling.RowSampler} is the CPU reference that every device sampler
 * matches in distribution, and {@link dev.ringmaster.runtime.sampling.SampledTokens} is what comes
 * back: token ids and the requested logprobs.
 */
package dev.ringmaster.runtime.sampling;
