/**
 * {@code ringmaster tune}: a grid of serving configurations, each run as an isolated trial (a child
 * {@code serve} process of the same Java, loaded by the {@code bench serve} client), with a
 * start-up and a run time limit. Every result and every failure (exit status, last error line, out
 * of memory, timeout, refused flag, failed requests) goes to a JSONL evidence file that a later run
 * resumes from; the report ranks the trials and prints the winner's launch command.
 */
package dev.ringmaster.tools.tune;
