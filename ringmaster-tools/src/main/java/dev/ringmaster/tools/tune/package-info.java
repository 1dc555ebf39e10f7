/**
 * {@code ringmaster tune}: a grid of serving configurations, each run as an isolated trial (a child
 * {@code serve} process of the same Java, loaded by the {@code bench serve} client, or an
 * engine-only {@code bench one-batch} child), with a start-up and a run time limit. Before anything
 * runs, points are pruned by {@code doctor}'s verdicts, by the simulator's feasibility and
 * optionally by its ranking ({@code --simulate-first}), each recorded with its reason. Every result
 * and every failure (exit status, last error line, out of memory, timeout, refused flag, failed
 * requests) goes to a JSONL evidence file that a later run resumes from. Each trial's load is
 * repeated; the report ranks the trials by the median of the objective (throughput, SLO goodput or
 * latency), declares a winner only beyond the noise (the spread of the repeats), charts them, and
 * prints the winner's or the tied trials' launch commands.
 */
package dev.ringmaster.tools.tune;
