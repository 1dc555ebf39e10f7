/** Hugging Face config.json parsing into one normalised {@code ModelConfig} for all families. */
package dev.ringmaster.model.config;
