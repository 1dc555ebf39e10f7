/**
 * {@code ringmaster bench serve}: an online serving benchmark compatible with {@code python -m
 * sglang.bench_serving} in flags and output. It makes a dataset of prompts (random text, random
 * token ids, a ShareGPT-format file, or groups sharing a generated system prompt), sends them to a
 * server over HTTP/1.1 with Poisson arrivals and bounded concurrency, times every streamed chunk,
 * and reports throughput and TTFT / TPOT / ITL / end-to-end latency as sglang does. It talks to any
 * OpenAI-compatible server (completions or chat) or to the native {@code /generate} API of
 * Ringmaster and SGLang, and depends on nothing of the server module.
 */
package dev.ringmaster.tools.benchserve;
