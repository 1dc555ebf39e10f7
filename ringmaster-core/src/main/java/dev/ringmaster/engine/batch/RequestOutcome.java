package dev.ringmaster.engine.batch;

/**
 * How a request ended.
 *
 * @param reason why it stopped
 * @param promptTokens prompt length
 * @param completionTokens tokens generated (a final stop token included)
 * @param preemptions how often it was evicted to free KV blocks and recomputed
 * @param cachedTokens prompt tokens whose keys and values came from the prefix cache and were never
 *     computed for this request: what its first admission found cached (after a preemption, pages
 *     it finds again were computed for it, so they do not count here; the engine-wide {@link
 *     EngineStats#cachedTokens} counts them)
 * @param error the fault behind {@link FinishReason#ERROR}, else null
 */
public record RequestOutcome(
    FinishReason reason,
    int promptTokens,
    int completionTokens,
    int preemptions,
    int cachedTokens,
    Throwable error) {}
