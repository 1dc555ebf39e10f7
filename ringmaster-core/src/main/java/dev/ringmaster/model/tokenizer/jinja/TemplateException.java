package dev.ringmaster.model.tokenizer.jinja;

/** A template could not be parsed or rendered; the message names the construct and line. */
public final class TemplateException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what went wrong
   * @param line the 1-based template line, or 0 when unknown
   */
  public TemplateException(String message, int line) {
    super(line > 0 ? message + " (template line " + line + ")" : message);
  }
}
