package dev.ringmaster.model.tokenizer.jinja;

/**
 * The value of a missing variable, key or attribute: renders as "", is falsy, iterates as empty.
 *
 * @param name what was looked up, for error messages
 */
record Undefined(String name) {}
