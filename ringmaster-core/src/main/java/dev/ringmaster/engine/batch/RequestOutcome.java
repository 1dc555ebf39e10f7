package dev.ringmaster.engine.batch;

/**
 * How a request ended.
 *
 * @param reason why it stopped
 * @param promptTokens prompt length
 * @param completionTokens tokens generated (a final stop token included)
 * @param preemptions how often it was evicted to free KV blocks and recomputed
 * @param cachedTokens prompt tokens taken from the prefix cache instead of computed (at its last
 *     admission)
 * @param error the fault behind {@link FinishReason#ERROR}, else null
 */
public record RequestOutcome(
    FinishReason reason,
    int promptTokens,
    int completionTokens,
    int preemptions,
    int cachedTokens,
    Throwable error) {}
