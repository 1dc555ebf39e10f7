package dev.ringmaster.sim.model;

/** How a weight is divided among tensor-/expert-parallel ranks (SGLang's DeepSeek layout). */
public enum Split {
  /** Every rank holds the whole weight (q_a/kv_a projections, indexer, router, norms). */
  REPLICATED,
  /** Divided by output columns across TP ranks (q_b, kv_b, gate/up). */
  COLUMN,
  /** Divided by input rows across TP ranks (o_proj, down). */
  ROW,
  /** Divided by vocabulary rows across TP ranks (embedding, LM head). */
  VOCAB,
  /** Routed experts: split by intermediate size across TP ranks, or whole experts across EP. */
  EXPERT
}
