package dev.ringmaster.model.tokenizer.jinja;

/**
 * A lexical token of a template.
 *
 * @param kind what it is
 * @param text its text (the literal's value for strings, the raw text for the rest)
 * @param line the 1-based line it starts on
 */
record Token(Kind kind, String text, int line) {
  enum Kind {
    /** Literal template text outside tags. */
    TEXT,
    /** {@code {{}. */
    VAR_BEGIN,
    /** {@code }}}. */
    VAR_END,
    /** {@code {%}. */
    BLOCK_BEGIN,
    /** {@code %}}. */
    BLOCK_END,
    NAME,
    STRING,
    INTEGER,
    FLOAT,
    /** An operator or punctuation. */
    OP,
    EOF
  }

  boolean is(Kind k, String s) {
    return kind == k && text.equals(s);
  }

  boolean isOp(String s) {
    return is(Kind.OP, s);
  }

  boolean isName(String s) {
    return is(Kind.NAME, s);
  }
}
