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
 * @param ttftFirstTokenS seconds to the first chunk carrying a token, with text or not (the native
 *     API's {@code output_ids} or {@code meta_info.completion_tokens}); NaN where the API streams
 *     no token ids (the OpenAI backends) or without streaming
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
    String generatedText,
    double ttftFirstTokenS) {

  /** A request whose API streams no token ids: no first-token time. */
  public RequestOutput(
      boolean success,
      String error,
      long startNanos,
      double ttftS,
      double[] itlS,
      double latencyS,
      int outputLen,
      int serverPromptTokens,
      String generatedText) {
    this(
        success,
        error,
        startNanos,
        ttftS,
        itlS,
        latencyS,
        outputLen,
        serverPromptTokens,
        generatedText,
        Double.NaN);
  }

  /** A request that failed before or while it was answered. */
  static RequestOutput failed(long startNanos, String error) {
    return new RequestOutput(false, error, startNanos, 0, new double[0], 0, 0, -1, "");
  }
}
