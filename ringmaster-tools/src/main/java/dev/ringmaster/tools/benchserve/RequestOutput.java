package dev.ringmaster.tools.benchserve;

/**
 * What one request measured.
 *
 * @param success a 200 response streamed to its end without an error event
 * @param error why it failed (status and body, or the exception), empty on success
 * @param startNanos {@link System#nanoTime()} when it was sent
 * @param ttftS seconds to the first chunk carrying text (the whole latency without streaming)
 * @param itlS seconds between chunks (native API: each gap split over the tokens it brought)
 * @param latencyS seconds to the last line of the response
 * @param outputLen generated tokens: the server's count, else the tokenizer's, else the request's
 * @param serverPromptTokens prompt tokens the server reported, or -1
 * @param generatedText the text received
 */
public record RequestOutput(
    boolean success,
    String error,
    long startNanos,
    double ttftS,
    double[] itlS,
    double latencyS,
    int outputLen,
    int serverPromptTokens,
    String generatedText) {

  /** A request that failed before or while it was answered. */
  static RequestOutput failed(long startNanos, String error) {
    return new RequestOutput(false, error, startNanos, 0, new double[0], 0, 0, -1, "");
  }
}
