/** Models: configuration, weights, tokenizer and architectures. */
package dev.ringmaster.model;
