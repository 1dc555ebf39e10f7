package dev.ringmaster.engine.spec;

import java.util.Arrays;
import java.util.Locale;

/** Where draft tokens come from (SGLang's {@code --speculative-algorithm} names). */
public enum SpeculativeAlgorithm {
  /** Prompt/context lookup: the continuation of an earlier occurrence of the last n tokens. */
  NGRAM,
  /** A small draft model with the target's tokenizer, run autoregressively. */
  STANDALONE,
  /**
   * The checkpoint's own multi-token-prediction layer (DeepSeek-V3 layout), fed the target's final
   * hidden state and chained for the draft length; {@code MTP} is another name for it.
   */
  NEXTN,
  /**
   * An EAGLE-3 draft head: one decoder layer over three of the target's layers' hidden states, its
   * own LM head over a draft vocabulary, chained on its own output hidden state.
   */
  EAGLE3;

  /**
   * The algorithm named {@code name} (any case; {@code MTP} means {@link #NEXTN}), or an error
   * listing the known names.
   */
  public static SpeculativeAlgorithm parse(String name) {
    String n = name.trim().toUpperCase(Locale.ROOT);
    try {
      return valueOf(n.equals("MTP") ? "NEXTN" : n);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown speculative algorithm '"
              + name
              + "': use one of "
              + Arrays.toString(values())
              + " (MTP = NEXTN)",
          e);
    }
  }
}
