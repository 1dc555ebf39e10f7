/**
 * Request parsing and error reporting shared by every endpoint: OpenAI-style error objects, strict
 * JSON reading, typed field access that names the offending parameter.
 */
package dev.ringmaster.server.api;
