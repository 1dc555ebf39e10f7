package dev.ringmaster.engine.constraint;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A compiled constraint bound to a vocabulary: per automaton state, the mask of the tokens that
 * keep the output a prefix of a match (end-of-sequence ids where it is a match), cached per {@link
 * MaskClasses mask class}: states that no token tells apart (the counts of a long counted string,
 * say) share one mask, so a request moving through them keeps hitting the cache. Constraints with
 * few classes have every mask computed at compile time, off the engine thread; others fill the
 * cache in the background on the engine's mask threads once a request uses them (where the masks
 * fit 32 MiB), and as classes are reached. Thread-safe; shared by every request with the same
 * constraint.
 */
public final class TokenConstraint implements OutputConstraint {
  /**
   * Masks up to this many longs in all are computed when the constraint is compiled (on the
   * request's thread): 4 MB, some 250 masks over a 129k vocabulary, a few tenths of a second. The
   * others are computed the first time their class is reached, on a mask thread beside a forward.
   */
  private static final long EAGER_WORDS = 1L << 19;

  /**
   * Masks up to this many longs in all (32 MiB; some 2,000 classes over a 129k vocabulary) are
   * filled in the background once a request uses the constraint ({@link #prefetch}).
   */
  private static final long PREFETCH_WORDS = 1L << 22;

  private final ByteDfa dfa;
  private final TokenVocabulary vocab;
  private final int words;
  private final MaskClasses classes;
  private final ConcurrentHashMap<Integer, StateMask> masks = new ConcurrentHashMap<>(); // by class
  private final AtomicBoolean prefetching = new AtomicBoolean();

  /** A state's mask and whether any token but end-of-sequence continues from it. */
  private record StateMask(long[] bits, boolean continues) {}

  /** Binds an automaton to a vocabulary. */
  public TokenConstraint(ByteDfa dfa, TokenVocabulary vocab) {
    this(dfa, vocab, MaskClasses.WORK_BUDGET);
  }

  /**
   * Binds an automaton to a vocabulary, grouping its states with at most {@code classWork}
   * successor look-ups ({@link MaskClasses}; 0: one class per state).
   */
  TokenConstraint(ByteDfa dfa, TokenVocabulary vocab, long classWork) {
    this.dfa = dfa;
    this.vocab = vocab;
    this.words = (vocab.size() + 63) >>> 6;
    this.classes = MaskClasses.of(dfa, vocab.maxTokenBytes(), classWork);
    if ((long) classes.count() * words <= EAGER_WORDS) {
      boolean[] done = new boolean[classes.count()];
      for (int s = 0; s < dfa.states(); s++) {
        if (!done[classes.classOf(s)]) {
          done[classes.classOf(s)] = true;
          mask(s);
        }
      }
    }
  }

  /**
   * Computes the masks of every class not cached yet on {@code executor}, once per constraint,
   * where they all fit {@value #PREFETCH_WORDS} longs: a class first reached near a counted bound
   * then finds its mask ready. One class at a time, each task queueing the next, so a mask a step
   * waits for never queues behind more than one prefetch task.
   */
  void prefetch(Executor executor) {
    if (prefetching.get()
        || (long) classes.count() * words > PREFETCH_WORDS
        || masks.size() == classes.count()
        || !prefetching.compareAndSet(false, true)) {
      return;
    }
    int[] reps = new int[classes.count()];
    Arrays.fill(reps, -1);
    for (int s = 0; s < dfa.states(); s++) {
      if (reps[classes.classOf(s)] < 0) {
        reps[classes.classOf(s)] = s;
      }
    }
    prefetchFrom(reps, 0, executor);
  }

  /** Queues the mask of the first class from {@code c} on that is not cached yet. */
  private void prefetchFrom(int[] reps, int c, Executor executor) {
    int next = c;
    while (next < reps.length && masks.containsKey(next)) {
      next++;
    }
    if (next == reps.length) {
      return;
    }
    int state = reps[next];
    int after = next + 1;
    try {
      executor.execute(
          () -> {
            mask(state);
            prefetchFrom(reps, after, executor);
          });
    } catch (RejectedExecutionException e) {
      // the engine is shutting down: the masks are computed when asked for, as without prefetch
    }
  }

  /** The automaton. */
  public ByteDfa dfa() {
    return dfa;
  }

  /** The states grouped by the mask they give. */
  MaskClasses classes() {
    return classes;
  }

  @Override
  public TokenVocabulary vocabulary() {
    return vocab;
  }

  @Override
  public ConstraintState newState() {
    return new DfaConstraintState(this);
  }

  /**
   * The allowed tokens from {@code state} as a bitset over the vocabulary (bit {@code t % 64} of
   * word {@code t / 64}); shared, do not modify.
   */
  public long[] mask(int state) {
    return entry(state).bits();
  }

  /** The mask of {@code state} when it is computed already, else null (never computes it). */
  long[] cachedMask(int state) {
    StateMask m = masks.get(classes.classOf(state));
    return m == null ? null : m.bits();
  }

  /**
   * Whether some token other than end-of-sequence is allowed from {@code state}: the cached mask's
   * answer, else a walk of the vocabulary that stops at the first allowed token (cheap: a
   * byte-level vocabulary has every single byte), so it never waits for a whole mask.
   */
  public boolean continues(int state) {
    StateMask m = masks.get(classes.classOf(state));
    return m != null ? m.continues() : vocab.anyAllowed(dfa, state);
  }

  private StateMask entry(int state) {
    // Every state of the class gives the same mask: this one computes it for all of them.
    return masks.computeIfAbsent(
        classes.classOf(state),
        c -> {
          long[] bits = new long[words];
          boolean continues = vocab.allowed(dfa, state, bits);
          if (dfa.accepting(state)) {
            for (int e : vocab.eosIds()) {
              if (e >= 0 && e < vocab.size()) {
                bits[e >>> 6] |= 1L << e;
              }
            }
          }
          return new StateMask(bits, continues);
        });
  }

  /** The state after {@code token} from {@code state}, or -1 when the token is not allowed. */
  public int advance(int state, int token) {
    byte[] b = vocab.bytes(token);
    if (b == null || b.length == 0) {
      return -1;
    }
    int s = state;
    for (byte x : b) {
      s = dfa.next(s, x);
      if (s < 0) {
        return -1;
      }
    }
    return s;
  }
}
