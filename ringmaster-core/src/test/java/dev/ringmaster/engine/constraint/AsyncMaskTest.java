package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Masks computed on a worker while the state waits ({@link ConstraintState#allowedTokensAsync})
 * equal the masks computed in place, and the completeness a first-token walk answers equals the
 * mask's, along random outputs of grammars and automata.
 */
class AsyncMaskTest {
  private static final String[] WORDS = {"{\"", "\": ", "\"", ", ", "ab", "true", "null", "12"};
  private static final int EOS = 256 + WORDS.length;
  private static final ExecutorService POOL = Executors.newFixedThreadPool(2);

  @AfterAll
  static void stop() {
    POOL.shutdown();
  }

  /** Every single byte, a few longer tokens, end-of-sequence and one id without bytes. */
  private static TokenVocabulary vocab() {
    byte[][] bytes = new byte[EOS + 2][];
    for (int b = 0; b < 256; b++) {
      bytes[b] = new byte[] {(byte) b};
    }
    for (int i = 0; i < WORDS.length; i++) {
      bytes[256 + i] = WORDS[i].getBytes(StandardCharsets.UTF_8);
    }
    return new TokenVocabulary(EOS + 4, bytes, new int[] {EOS});
  }

  private static List<Integer> allowed(long[] mask, int size) {
    List<Integer> out = new ArrayList<>();
    for (int t = 0; t < size; t++) {
      if ((mask[t >>> 6] & (1L << t)) != 0) {
        out.add(t);
      }
    }
    return out;
  }

  private static void walk(OutputConstraint c, long seed) {
    Random rnd = new Random(seed);
    ConstraintState async = c.newState();
    ConstraintState inPlace = c.newState();
    for (int step = 0; step < 60 && !inPlace.isComplete(); step++) {
      CompletableFuture<long[]> f = async.allowedTokensAsync(POOL);
      assertThat(async.allowedTokensAsync(POOL).join()).isEqualTo(f.join());
      long[] expected = inPlace.allowedTokens();
      assertThat(f.join()).isEqualTo(expected);
      List<Integer> ok = allowed(expected, c.vocabulary().size());
      assertThat(ok).isNotEmpty();
      int token = ok.get(rnd.nextInt(ok.size()));
      async.accept(token);
      inPlace.accept(token);
      assertThat(async.isComplete()).isEqualTo(inPlace.isComplete());
      assertThat(async.accepting()).isEqualTo(inPlace.accepting());
    }
  }

  @Test
  void grammarMasksFromTheWorkerEqualMasksComputedInPlace() {
    String ebnf =
        """
        root ::= "{" pair ("," pair)* "}"
        pair ::= "\\"" [a-c]+ "\\": " value
        value ::= "true" | "null" | [0-9]+ | root
        """;
    for (long seed = 1; seed <= 20; seed++) {
      // A fresh constraint each time: its mask cache is empty, so the worker computes masks.
      walk(GrammarConstraint.ofEbnf(ebnf, vocab()), seed);
    }
  }

  @Test
  void automatonMasksFromTheWorkerEqualMasksComputedInPlace() {
    for (long seed = 1; seed <= 20; seed++) {
      walk(
          new TokenConstraint(ByteDfa.ofRegex("\\{\"a\": (true|null|[0-9]{1,3})\\}"), vocab()),
          seed);
    }
  }

  @Test
  void completenessWithoutAMaskMatchesTheMask() {
    TokenVocabulary v = vocab();
    ByteDfa dfa = ByteDfa.ofRegex("ab(c|de)?");
    TokenConstraint c = new TokenConstraint(dfa, v);
    for (int s = 0; s < dfa.states(); s++) {
      boolean any = false;
      long[] mask = c.mask(s);
      for (int t : allowed(mask, v.size())) {
        any |= t != EOS;
      }
      assertThat(v.anyAllowed(dfa, s)).as("state " + s).isEqualTo(any);
    }
  }
}
