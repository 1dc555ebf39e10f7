/**
 * The OpenAI-compatible API: {@code /v1/completions}, {@code /v1/chat/completions} (plain and
 * streamed) and {@code /v1/models}.
 */
package dev.ringmaster.server.openai;
