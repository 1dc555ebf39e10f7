package dev.ringmaster.engine.constraint;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A context-free grammar bound to a vocabulary. A CFG has no finite automaton, so each request
 * walks an Earley chart ({@link GrammarConstraintState}); the mask of a chart is computed by
 * stepping every vocabulary token's bytes from it (tokens sharing a prefix share the steps) and
 * cached under the chart's {@linkplain EarleyChart#signature() signature}, which is equal for
 * charts that allow the same continuations, so repeated structure (list items, the same request
 * again) hits the cache. Masks are exact: a token is allowed iff the output stays a prefix of a
 * sentence. Thread-safe; shared by every request with the same grammar.
 */
public final class GrammarConstraint implements OutputConstraint {
  /** The cache holds at most this many longs of masks in all. */
  private static final long CACHE_WORDS = 1L << 22;

  private final Grammar grammar;
  private final TokenVocabulary vocab;
  private final int words;
  private final Map<Signature, Mask> cache;

  /** A mask and whether any token but end-of-sequence is in it. */
  record Mask(long[] bits, boolean continues) {}

  private record Signature(long[] key) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Signature s && Arrays.equals(key, s.key);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(key);
    }

    @Override
    public String toString() {
      return Arrays.toString(key);
    }
  }

  GrammarConstraint(Grammar grammar, TokenVocabulary vocab) {
    this.grammar = grammar;
    this.vocab = vocab;
    this.words = (vocab.size() + 63) >>> 6;
    int entries = (int) Math.max(16, CACHE_WORDS / Math.max(1, words));
    this.cache =
        new LinkedHashMap<>(64, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<Signature, Mask> e) {
            return size() > entries;
          }
        };
  }

  /** The grammar of an EBNF text bound to a vocabulary (see {@link EbnfParser} for the syntax). */
  public static GrammarConstraint ofEbnf(String ebnf, TokenVocabulary vocab) {
    return new GrammarConstraint(Grammar.ofEbnf(ebnf), vocab);
  }

  @Override
  public TokenVocabulary vocabulary() {
    return vocab;
  }

  @Override
  public ConstraintState newState() {
    return new GrammarConstraintState(this, new EarleyChart(grammar));
  }

  /** The cached mask of a chart, or null when it is not cached (never computes one). */
  Mask cachedMask(EarleyChart chart) {
    Signature key = new Signature(chart.signature());
    synchronized (cache) {
      return cache.get(key);
    }
  }

  /** The mask of a chart (the chart is walked and left as it was). */
  Mask mask(EarleyChart chart) {
    Signature key = new Signature(chart.signature());
    synchronized (cache) {
      Mask m = cache.get(key);
      if (m != null) {
        return m;
      }
    }
    long[] bits = new long[words];
    boolean continues = vocab.allowed(chart, bits);
    if (chart.accepting()) {
      for (int e : vocab.eosIds()) {
        if (e >= 0 && e < vocab.size()) {
          bits[e >>> 6] |= 1L << e;
        }
      }
    }
    Mask m = new Mask(bits, continues);
    synchronized (cache) {
      cache.put(key, m);
    }
    return m;
  }
}
