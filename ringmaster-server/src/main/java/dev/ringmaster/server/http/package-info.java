/**
 * HTTP plumbing on the Helidon SE web server: a shell that turns every failure into an OpenAI-style
 * error object, bounded body reading, server-sent events, API key checks, HTTP/1.0 translation, and
 * connections watched for their client's end and closed in stages.
 */
package dev.ringmaster.server.http;
