/**
 * A small interpreter for the subset of Jinja used by chat templates in {@code
 * tokenizer_config.json}.
 *
 * <p>It follows the environment transformers renders chat templates with: {@code trim_blocks} and
 * {@code lstrip_blocks} on, loop controls ({@code break}/{@code continue}) enabled, a {@code
 * tojson} filter that does not escape HTML, and a {@code raise_exception} function. Values follow
 * Python semantics (truthiness, {@code str()}, equality). Anything outside the subset fails with a
 * {@link dev.ringmaster.model.tokenizer.jinja.TemplateException} naming the construct and the
 * template line.
 */
package dev.ringmaster.model.tokenizer.jinja;
