package dev.ringmaster.model;

/**
 * A model directory cannot be used: a file is missing, malformed or truncated, a tensor is missing
 * or has the wrong shape, or the architecture is not supported. The message names the file (and the
 * tensor where there is one) and says what to do; the CLI prints it without a stack trace.
 */
public class ModelLoadException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates an exception with a complete, user-facing message. */
  public ModelLoadException(String message) {
    super(message);
  }

  /** Creates an exception with a user-facing message and the underlying cause. */
  public ModelLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
