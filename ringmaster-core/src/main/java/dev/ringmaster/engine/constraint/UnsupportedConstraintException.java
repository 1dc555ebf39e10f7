package dev.ringmaster.engine.constraint;

/** A regex, choice list or JSON schema that cannot be compiled; the message names the feature. */
public final class UnsupportedConstraintException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** An exception with a message naming what is unsupported and what to do instead. */
  public UnsupportedConstraintException(String message) {
    super(message);
  }
}
