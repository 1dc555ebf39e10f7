package dev.ringmaster.engine.batch;

import dev.ringmaster.model.arch.BatchLayout;
import dev.ringmaster.model.arch.CausalLm;
import dev.ringmaster.model.arch.KvCache;
import dev.ringmaster.model.config.ModelConfig;

/**
 * What the engine needs from a model: its configuration, per-sequence caches and the batched
 * forward step. An interface rather than {@link CausalLm} itself so that other backends (and
 * fault-injecting test doubles) can stand in.
 */
public interface StepModel {
  /** The model's configuration. */
  ModelConfig config();

  /** A new, empty cache for one sequence. */
  KvCache newCache();

  /** Bytes of weights, for memory reports. */
  long weightBytes();

  /** The batched step; see {@link CausalLm#forward}. */
  float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows);

  /** Adapts a CPU model. */
  static StepModel of(CausalLm lm) {
    return new StepModel() {
      @Override
      public ModelConfig config() {
        return lm.config();
      }

      @Override
      public KvCache newCache() {
        return lm.newCache();
      }

      @Override
      public long weightBytes() {
        return lm.weightBytes();
      }

      @Override
      public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] rows) {
        return lm.forward(tokens, layout, caches, rows);
      }
    };
  }
}
