/** The {@code ringmaster} command line (picocli): generate, tokenize, model, bench. */
package dev.ringmaster.cli;
