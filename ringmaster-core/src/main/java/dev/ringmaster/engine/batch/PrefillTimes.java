package dev.ringmaster.engine.batch;

/**
 * When a request's prefill ran, as the engine thread saw it ({@link System#nanoTime}): the parts of
 * its time to first token that the engine owns. Queue wait is submission to {@code firstStepNanos};
 * the prefill is {@code firstStepNanos} to {@code tokenNanos}.
 *
 * @param firstStepNanos when the first step holding its prompt tokens was handed to the model
 * @param tokenNanos when the step that sampled its first token came back to the host
 * @param steps forward steps its prefill took (several with chunked prefill or a preemption)
 */
public record PrefillTimes(long firstStepNanos, long tokenNanos, int steps) {}
