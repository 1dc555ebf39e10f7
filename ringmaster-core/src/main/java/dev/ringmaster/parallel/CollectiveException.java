package dev.ringmaster.parallel;

/**
 * A collective could not complete: a peer rank failed, or a peer did not arrive within the timeout.
 * The group is unusable afterwards.
 */
public final class CollectiveException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failure with a message that names the rank and what it was waiting for. */
  public CollectiveException(String message) {
    super(message);
  }

  /** A failure caused by another rank's failure. */
  public CollectiveException(String message, Throwable cause) {
    super(message, cause);
  }
}
