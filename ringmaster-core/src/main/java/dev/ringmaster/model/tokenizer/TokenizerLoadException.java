package dev.ringmaster.model.tokenizer;

/**
 * A tokenizer could not be loaded: a file is missing or unreadable, is not valid JSON, or describes
 * a component this implementation does not support. The message names the file and the problem.
 */
public final class TokenizerLoadException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what is wrong, naming the file
   * @param cause the underlying failure, or null
   */
  public TokenizerLoadException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * @param message what is wrong, naming the file
   */
  public TokenizerLoadException(String message) {
    super(message);
  }
}
