package dev.ringmaster.tools.benchserve;

/**
 * One benchmark request's input.
 *
 * @param text the prompt text, or null when {@code ids} is the prompt
 * @param ids the prompt as token ids, or null when {@code text} is the prompt
 * @param promptLen prompt tokens as the dataset counts them, or -1 when unknown (then the server's
 *     reported prompt tokens are counted)
 * @param outputLen tokens to ask for
 */
public record DatasetRow(String text, int[] ids, int promptLen, int outputLen) {
  /** A text prompt. */
  public static DatasetRow text(String text, int promptLen, int outputLen) {
    return new DatasetRow(text, null, promptLen, outputLen);
  }

  /** A token-id prompt. */
  public static DatasetRow ids(int[] ids, int outputLen) {
    return new DatasetRow(null, ids, ids.length, outputLen);
  }

  /** This row asking for {@code n} output tokens (warm-up requests ask for fewer). */
  public DatasetRow withOutputLen(int n) {
    return new DatasetRow(text, ids, promptLen, n);
  }
}
