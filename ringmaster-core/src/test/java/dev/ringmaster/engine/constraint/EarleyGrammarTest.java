package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The EBNF parser and the Earley recogniser: membership, refusals, and exact token masks. */
class EarleyGrammarTest {
  private static final String ARITHMETIC =
      """
      # left-recursive, as grammar books write it
      root ::= expr
      expr ::= expr ("+" | "-") term | term
      term ::= term ("*" | "/") factor | factor
      factor ::= [0-9]+ | "(" expr ")"
      """;

  private static final String NESTED_LISTS =
      """
      root  ::= list
      list  ::= "[" (value ("," value)*)? "]"
      value ::= list | [a-z]{1,3}
      """;

  private static boolean accepts(String grammar, String text) {
    EarleyChart chart = new EarleyChart(Grammar.ofEbnf(grammar));
    for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
      if (!chart.push(b & 0xff)) {
        return false;
      }
    }
    return chart.accepting();
  }

  @Test
  void leftRecursiveArithmetic() {
    for (String ok : List.of("1", "12+3", "1*2+3*(4-5)/6", "((7))", "1+2+3+4")) {
      assertThat(accepts(ARITHMETIC, ok)).as(ok).isTrue();
    }
    for (String bad : List.of("", "+", "1+", "(1", "1)", "1++2", "()", "a")) {
      assertThat(accepts(ARITHMETIC, bad)).as(bad).isFalse();
    }
  }

  @Test
  void nestedListsAndBoundedRepeats() {
    for (String ok : List.of("[]", "[a]", "[abc,[],[x,[y]]]", "[[[[]]]]")) {
      assertThat(accepts(NESTED_LISTS, ok)).as(ok).isTrue();
    }
    for (String bad : List.of("[", "[abcd]", "[a,]", "[,a]", "[a][b]", "[A]")) {
      assertThat(accepts(NESTED_LISTS, bad)).as(bad).isFalse();
    }
  }

  @Test
  void literalsClassesAndNullableRules() {
    String g =
        """
        root ::= greeting opt opt name "\\n"
        greeting ::= "h\\u00e9" | 'yo'
        opt ::= ("!" | "")
        name ::= [^\\n!]{2,} | .
        """;
    assertThat(accepts(g, "hé!ab\n")).isTrue();
    assertThat(accepts(g, "yo!!日本\n")).isTrue();
    assertThat(accepts(g, "yoé\n")).isTrue(); // '.' is one whole character
    assertThat(accepts(g, "yo!!!ab\n")).isFalse();
    assertThat(accepts(g, "hé\n")).isFalse();
  }

  /** On a regular grammar the recogniser agrees with java.util.regex on random strings. */
  @Test
  void agreesWithRegexOnRegularGrammars() {
    String g = "root ::= (\"a\" | \"bc\")* [x-z]? (\"b\"{2,3} | \"c\")+";
    Pattern p = Pattern.compile("(a|bc)*[x-z]?(b{2,3}|c)+");
    Random rnd = new Random(7);
    String alphabet = "abcxz";
    for (int i = 0; i < 3000; i++) {
      StringBuilder sb = new StringBuilder();
      int n = rnd.nextInt(9);
      for (int k = 0; k < n; k++) {
        sb.append(alphabet.charAt(rnd.nextInt(alphabet.length())));
      }
      String s = sb.toString();
      assertThat(accepts(g, s)).as(s).isEqualTo(p.matcher(s).matches());
    }
  }

  @Test
  void refusesWhatItDoesNotSupportNamingIt() {
    assertThatThrownBy(() -> Grammar.ofEbnf("start ::= \"a\""))
        .isInstanceOf(UnsupportedConstraintException.class)
        .hasMessageContaining("'root'");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a\" other"))
        .hasMessageContaining("'other'")
        .hasMessageContaining("not defined");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= (= \"a\") \"a\""))
        .hasMessageContaining("lookahead");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a\" root"))
        .hasMessageContaining("derives no finite string");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a"))
        .hasMessageContaining("unterminated string");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a\"\nroot ::= \"b\""))
        .hasMessageContaining("defined twice")
        .hasMessageContaining("line 2");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a\"{2000}"))
        .hasMessageContaining("above 1000");
    assertThatThrownBy(() -> Grammar.ofEbnf("root ::= \"a\" )")).hasMessageContaining("')'");
  }

  private static final String[] TOKENS = {
    "1", "2", "12", "+", "*", "(", ")", "(1", "1)", "+(", "[", "]", "[]", ",", "a", "ab", "abc",
    "abcd", ",[", "],", "x"
  };
  private static final int EOS = TOKENS.length;

  private static TokenVocabulary vocab() {
    byte[][] bytes = new byte[TOKENS.length + 1][];
    for (int i = 0; i < TOKENS.length; i++) {
      bytes[i] = TOKENS[i].getBytes(StandardCharsets.UTF_8);
    }
    return new TokenVocabulary(TOKENS.length + 3, bytes, new int[] {EOS});
  }

  /**
   * Along random walks the (cached) mask of every state is exactly the tokens whose bytes keep the
   * output a prefix of a sentence, and end-of-sequence exactly where it is a sentence.
   */
  @Test
  void masksMatchBruteForceAlongRandomWalks() {
    TokenVocabulary v = vocab();
    Random rnd = new Random(3);
    for (String g : List.of(ARITHMETIC, NESTED_LISTS)) {
      GrammarConstraint c = GrammarConstraint.ofEbnf(g, v);
      Grammar grammar = Grammar.ofEbnf(g);
      for (int walk = 0; walk < 40; walk++) {
        ConstraintState st = c.newState();
        List<Integer> taken = new ArrayList<>();
        for (int step = 0; step < 30 && !st.isComplete(); step++) {
          long[] mask = st.allowedTokens();
          List<Integer> allowed = new ArrayList<>();
          for (int t = 0; t < v.size(); t++) {
            boolean expected =
                t == EOS ? st.accepting() : t < TOKENS.length && viable(grammar, taken, t, v);
            assertThat((mask[t >>> 6] & (1L << t)) != 0)
                .as(g + " " + taken + " token " + t)
                .isEqualTo(expected);
            if (expected) {
              allowed.add(t);
            }
          }
          int t = allowed.get(rnd.nextInt(allowed.size()));
          st.accept(t);
          if (t != EOS) {
            taken.add(t);
          }
        }
      }
    }
  }

  /** Whether the tokens taken and then {@code t} are a prefix of a sentence, from a fresh chart. */
  private static boolean viable(Grammar g, List<Integer> taken, int t, TokenVocabulary v) {
    EarleyChart chart = new EarleyChart(g);
    List<Integer> all = new ArrayList<>(taken);
    all.add(t);
    for (int tok : all) {
      for (byte b : v.bytes(tok)) {
        if (!chart.push(b & 0xff)) {
          return false;
        }
      }
    }
    return true;
  }

  @Test
  void refusesATokenTheMaskLeavesOutAndKeepsItsState() {
    GrammarConstraint c = GrammarConstraint.ofEbnf(NESTED_LISTS, vocab());
    ConstraintState st = c.newState();
    st.accept(10); // "["
    assertThatThrownBy(() -> st.accept(17)) // "abcd": only three letters
        .isInstanceOf(IllegalStateException.class);
    st.accept(16); // "abc"
    st.accept(11); // "]"
    assertThat(st.accepting()).isTrue();
    // Only end-of-sequence can follow a whole list, so the request is complete.
    assertThat(st.isComplete()).isTrue();
    assertThat(st.allowedTokens()[0]).isEqualTo(1L << EOS);
  }
}
