/**
 * Byte-level BPE tokenization compatible with Hugging Face {@code tokenizer.json} files, streaming
 * detokenization, and chat templates.
 *
 * <p>{@link dev.ringmaster.model.tokenizer.Tokenizer} is the entry point: it reads the normalizer,
 * pre-tokenizer, BPE model, added tokens, post-processor and decoder of a {@code tokenizer.json}
 * and reproduces the ids the Hugging Face {@code tokenizers} library gives for the same file.
 * {@link dev.ringmaster.model.tokenizer.ChatTemplate} renders the Jinja {@code chat_template} of
 * {@code tokenizer_config.json}.
 */
package dev.ringmaster.model.tokenizer;
