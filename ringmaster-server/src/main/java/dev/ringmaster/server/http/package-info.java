/**
 * HTTP plumbing on the Helidon SE web server: a shell that turns every failure into an OpenAI-style
 * error object, bounded body reading, server-sent events, API key checks.
 */
package dev.ringmaster.server.http;
