package dev.ringmaster.cli;

/** A mistake in how a command was invoked; printed as one line, exit status 2. */
final class UserError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  UserError(String message) {
    super(message);
  }
}
