package dev.ringmaster.sim.serve;

/**
 * A {@code bench serve} workload to predict: fixed-length random prompts ({@code random-ids} with
 * range ratio 1), optionally in groups sharing a system prompt ({@code generated-shared-prefix}).
 *
 * @param numPrompts requests sent ({@code --num-prompts})
 * @param inputLen prompt tokens of each request, the shared prefix included
 * @param outputLen tokens generated per request
 * @param maxConcurrency requests in flight at most ({@code --max-concurrency}); 0 for no limit
 * @param requestRate requests per second, Poisson arrivals as bench serve draws them ({@code
 *     --request-rate}); infinite sends as fast as the concurrency limit lets
 * @param sharedPrefixLen leading prompt tokens shared within a group (0: none)
 * @param promptsPerGroup requests per group sharing that prefix
 * @param seed seed of the arrival gaps and of the request order (bench serve shuffles groups)
 */
public record ServeWorkload(
    int numPrompts,
    int inputLen,
    int outputLen,
    int maxConcurrency,
    double requestRate,
    int sharedPrefixLen,
    int promptsPerGroup,
    long seed) {

  /** Validates, each error naming its bench serve flag. */
  public ServeWorkload {
    if (numPrompts < 1) {
      throw new IllegalArgumentException("--num-prompts must be at least 1, got " + numPrompts);
    }
    if (inputLen < 1 || outputLen < 1) {
      throw new IllegalArgumentException(
          "prompt and output lengths must be at least 1 token, got "
              + inputLen
              + " and "
              + outputLen);
    }
    if (maxConcurrency < 0) {
      throw new IllegalArgumentException(
          "--max-concurrency must be positive (or absent for no limit), got " + maxConcurrency);
    }
    if (!(requestRate > 0)) {
      throw new IllegalArgumentException(
          "--request-rate must be positive (inf for no gaps), got " + requestRate);
    }
    if (sharedPrefixLen < 0 || sharedPrefixLen >= inputLen) {
      throw new IllegalArgumentException(
          "the shared prefix ("
              + sharedPrefixLen
              + " tokens) must be shorter than the prompt ("
              + inputLen
              + " tokens)");
    }
    if (promptsPerGroup < 1) {
      throw new IllegalArgumentException(
          "--gsp-prompts-per-group must be at least 1, got " + promptsPerGroup);
    }
  }

  /** Random prompts of one length, no shared prefix, sent as the concurrency limit allows. */
  public static ServeWorkload random(int numPrompts, int inputLen, int outputLen, int concurrency) {
    return new ServeWorkload(
        numPrompts, inputLen, outputLen, concurrency, Double.POSITIVE_INFINITY, 0, 1, 1);
  }
}
