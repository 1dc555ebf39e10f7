package dev.ringmaster.engine.spec;

import java.util.Arrays;
import java.util.Locale;

/** Where draft tokens come from (SGLang's {@code --speculative-algorithm} names). */
public enum SpeculativeAlgorithm {
  /** Prompt/context lookup: the continuation of an earlier occurrence of the last n tokens. */
  NGRAM,
  /** A small draft model with the target's tokenizer, run autoregressively. */
  STANDALONE;

  /** The algorithm named {@code name} (any case), or an error listing the known names. */
  public static SpeculativeAlgorithm parse(String name) {
    try {
      return valueOf(name.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown speculative algorithm '" + name + "': use one of " + Arrays.toString(values()),
          e);
    }
  }
}
