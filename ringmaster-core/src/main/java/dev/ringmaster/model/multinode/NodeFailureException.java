package dev.ringmaster.model.multinode;

/**
 * Another node failed, could not be reached, disagreed about the run, or went away; the message
 * names the node and what happened. After one during a step the model spread over the nodes is
 * unusable.
 */
public final class NodeFailureException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failure described by {@code message}. */
  public NodeFailureException(String message) {
    super(message);
  }

  /** A failure described by {@code message}, caused by {@code cause}. */
  public NodeFailureException(String message, Throwable cause) {
    super(message, cause);
  }
}
