package dev.ringmaster.testing;

import dev.ringmaster.model.config.ModelConfig;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.LanguageModel;

/**
 * A model that passes every call to another one; tests override {@link #forward} to watch or
 * disturb the steps (fault injection, gating, profiling stand-ins).
 */
public class ForwardingLanguageModel implements LanguageModel {
  /** The model the calls go to. */
  protected final LanguageModel inner;

  /** Forwards to {@code inner}. */
  public ForwardingLanguageModel(LanguageModel inner) {
    this.inner = inner;
  }

  @Override
  public ModelConfig config() {
    return inner.config();
  }

  @Override
  public KvCache newCache() {
    return inner.newCache();
  }

  @Override
  public KvCache newCache(dev.ringmaster.runtime.KvBlockAllocator blocks) {
    return inner.newCache(blocks);
  }

  @Override
  public long weightBytes() {
    return inner.weightBytes();
  }

  @Override
  public float[] forward(int[] tokens, BatchLayout layout, KvCache[] caches, int[] logitRows) {
    return inner.forward(tokens, layout, caches, logitRows);
  }

  @Override
  public void close() {
    inner.close();
  }
}
