/**
 * The native API in SGLang's shape: {@code /generate}, {@code /tokenize}, {@code /detokenize},
 * health checks, {@code /get_server_info} and {@code /metrics}.
 */
package dev.ringmaster.server.nativeapi;
