package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Token masks against a brute-force walk of every token, and a request's state over tokens. */
class TokenConstraintTest {
  private static final String[] TOKENS = {
    "{", "}", "\"", "\":", ",", " ", "a", "b", "ab", "\"a", "1", "12", "-", ".", "0", "true", "tr",
    "ue", "null", "{\"", "\"}", "é", "\u00c3", "x", "[", "]", "\":\"", "e", ":", "9"
  };
  private static final int EOS = TOKENS.length;
  private static final int SPECIAL = TOKENS.length + 1;
  private static final int VOCAB = TOKENS.length + 5; // a padded logits row

  private static TokenVocabulary vocab() {
    byte[][] bytes = new byte[TOKENS.length + 2][];
    for (int i = 0; i < TOKENS.length; i++) {
      bytes[i] = TOKENS[i].getBytes(StandardCharsets.UTF_8);
    }
    bytes[21] = new byte[] {(byte) 0xC3}; // half of 'é' ...
    bytes[22] = new byte[] {(byte) 0xA9}; // ... and its other half
    bytes[EOS] = null;
    bytes[SPECIAL] = null;
    return new TokenVocabulary(VOCAB, bytes, new int[] {EOS});
  }

  private static boolean bit(long[] mask, int t) {
    return (mask[t >>> 6] & (1L << t)) != 0;
  }

  /** Every reachable state's mask equals walking each token's bytes through the automaton. */
  @Test
  void masksMatchBruteForce() {
    TokenVocabulary v = vocab();
    for (ByteDfa dfa :
        List.of(
            ByteDfa.ofRegex("\\{\"a\":(-?[0-9]+(\\.[0-9]+)?|true|null)\\}"),
            ByteDfa.ofRegex("(ab|é)*x"),
            ByteDfa.ofChoices(List.of("true", "null", "tab")))) {
      TokenConstraint c = new TokenConstraint(dfa, v);
      for (int s = 0; s < dfa.states(); s++) {
        long[] mask = c.mask(s);
        boolean anyOther = false;
        for (int t = 0; t < VOCAB; t++) {
          boolean expected;
          if (t == EOS) {
            expected = dfa.accepting(s);
          } else {
            byte[] b = v.bytes(t);
            int st = s;
            if (b == null) {
              st = -1;
            } else {
              for (byte x : b) {
                st = st < 0 ? -1 : dfa.next(st, x);
              }
            }
            expected = st >= 0;
            anyOther |= expected;
          }
          assertThat(bit(mask, t)).as("state %d token %d", s, t).isEqualTo(expected);
        }
        assertThat(c.continues(s)).isEqualTo(anyOther);
      }
    }
  }

  /** Random walks under the mask always end in a match. */
  @Test
  void randomMaskedWalksEndInAMatch() {
    TokenVocabulary v = vocab();
    ByteDfa dfa = ByteDfa.ofRegex("\\{\"a\":(-?[0-9]{1,3}|true|null|\"(ab|é)*\")\\}");
    TokenConstraint c = new TokenConstraint(dfa, v);
    Random rnd = new Random(7);
    for (int run = 0; run < 200; run++) {
      ConstraintState st = c.newState();
      StringBuilder out = new StringBuilder();
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      for (int step = 0; step < 100 && !st.isComplete(); step++) {
        long[] mask = st.allowedTokens();
        List<Integer> allowed = new ArrayList<>();
        for (int t = 0; t < VOCAB; t++) {
          if (bit(mask, t)) {
            allowed.add(t);
          }
        }
        assertThat(allowed).isNotEmpty();
        int t = allowed.get(rnd.nextInt(allowed.size()));
        st.accept(t);
        if (t != EOS) {
          bytes.writeBytes(v.bytes(t));
        }
        out.append(t).append(' ');
      }
      assertThat(st.isComplete()).as(out.toString()).isTrue();
      assertThat(dfa.matches(bytes.toByteArray())).as(out.toString()).isTrue();
    }
  }
}
