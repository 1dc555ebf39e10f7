package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The forced continuation of regexes, schemas and grammars ({@link ConstraintState#forcedBytes}),
 * and its retokenisation for jump-forward decoding ({@link ConstraintState#jumpForward}) with the
 * embedded model's tokenizer.
 */
class ForcedContinuationTest {
  private static final int MAX = 64;
  private static final String SCHEMA =
      "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
          + "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"]}";

  private static final Tokenizer TOKENIZER = Tokenizer.load(RepoPaths.require("models/sotu-moe"));
  private static final TokenVocabulary VOCAB =
      TokenVocabulary.of(TOKENIZER, TOKENIZER.vocabSize(), TOKENIZER.eosIds());
  private static final ConstraintCompiler COMPILER = new ConstraintCompiler(VOCAB);

  private static String forced(ConstraintState s) {
    return new String(s.forcedBytes(MAX), StandardCharsets.UTF_8);
  }

  /** Accepts the tokenizer's split of {@code text}. */
  private static ConstraintState after(OutputConstraint c, String text) {
    ConstraintState s = c.newState();
    for (int t : TOKENIZER.encode(text, false)) {
      s.accept(t);
    }
    return s;
  }

  private static String spelled(int[] ids) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int id : ids) {
      out.writeBytes(VOCAB.bytes(id));
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void regexFollowsSingleExitsAndStopsAtAChoiceOrAMatch() {
    assertThat(forced(COMPILER.regex("abc(d|e)f").newState())).isEqualTo("abc");
    assertThat(forced(after(COMPILER.regex("abc(d|e)fgh"), "abcd"))).isEqualTo("fgh");
    // A whole match could end here (end-of-sequence is the other continuation).
    assertThat(forced(COMPILER.regex("ab(cd)?").newState())).isEqualTo("ab");
    assertThat(forced(after(COMPILER.regex("ab(cd)?"), "ab"))).isEmpty();
    assertThat(forced(COMPILER.regex("[ab]c").newState())).isEmpty();
    assertThat(forced(COMPILER.regex("x{100}").newState())).isEqualTo("x".repeat(MAX));
    assertThat(forced(COMPILER.choice(java.util.List.of("yes", "yet")).newState())).isEqualTo("ye");
    // Bytes inside one character are forced one by one, up to the choice.
    assertThat(COMPILER.regex("(é|è)").newState().forcedBytes(MAX)).containsExactly(0xC3);
  }

  @Test
  void schemaForcesKeysAfterTheirQuote() throws Exception {
    OutputConstraint c = COMPILER.jsonSchema(new ObjectMapper().readTree(SCHEMA));
    assertThat(forced(c.newState())).isEqualTo("{");
    assertThat(forced(after(c, "{"))).isEmpty(); // an optional space or the quote
    assertThat(forced(after(c, "{\""))).isEqualTo("name\"");
    assertThat(forced(after(c, "{\"name\": \"Al\","))).isEmpty();
    assertThat(forced(after(c, "{\"name\": \"Al\",\""))).isEqualTo("age\"");
    assertThat(forced(after(c, "{\"name\": \"Al\", \"age\": 3"))).isEmpty();
  }

  @Test
  void grammarForcesWhereOneByteCanFollow() {
    GrammarConstraint g =
        COMPILER.ebnf(
            "root ::= \"hello \" name \"!\" tail\nname ::= [a-z]+\ntail ::= \" bye\" | \"\"");
    assertThat(forced(g.newState())).isEqualTo("hello ");
    assertThat(forced(after(g, "hello"))).isEqualTo(" ");
    assertThat(forced(after(g, "hello bob"))).isEmpty(); // another letter or the '!'
    assertThat(forced(after(g, "hello bob!"))).isEmpty(); // a match: may end
    assertThat(forced(after(g, "hello bob! "))).isEqualTo("bye");
    // The chart is left as it was.
    ConstraintState s = after(g, "hello bob! ");
    s.forcedBytes(MAX);
    assertThat(forced(s)).isEqualTo("bye");
    assertThat(s.accepting()).isFalse();
  }

  @Test
  void jumpForwardRetokenisesTheSampledTokenWithTheForcedBytes() throws Exception {
    OutputConstraint c = COMPILER.regex("\\{\"name\": \"[a-z]+\", \"city\": \"[a-z]+\"\\}");
    ConstraintState s = c.newState();
    int open = TOKENIZER.encode("{", false)[0];
    int[] run = s.jumpForward(open, MAX);
    assertThat(run).isNotNull();
    assertThat(spelled(run)).isEqualTo("{\"name\": \"");
    assertThat(run).containsExactly(TOKENIZER.encode("{\"name\": \"", false));
    // The state did not move; the run is accepted token by token.
    assertThat(forced(s)).isEqualTo("{\"name\": \"");
    for (int t : run) {
      s.accept(t);
    }
    assertThat(forced(s)).isEmpty();
    // Nothing forced after a letter of the name.
    assertThat(s.jumpForward(TOKENIZER.encode("a", false)[0], MAX)).isNull();
  }

  @Test
  void jumpForwardOnAGrammarLeavesTheChartAsItWas() {
    GrammarConstraint g = COMPILER.ebnf("root ::= \"a\" [b-c] \" and so on\"");
    ConstraintState s = after(g, "a");
    int b = TOKENIZER.encode("b", false)[0];
    int[] run = s.jumpForward(b, MAX);
    assertThat(spelled(run)).isEqualTo("b and so on");
    assertThat(run).containsExactly(TOKENIZER.encode("b and so on", false));
    assertThat(forced(s)).isEmpty(); // still before the choice of b or c
    for (int t : run) {
      s.accept(t);
    }
    assertThat(s.accepting()).isTrue();
  }

  @Test
  void noJumpWithoutATokenizerOrInsideACharacter() {
    TokenVocabulary bare =
        new TokenVocabulary(
            3,
            new byte[][] {
              "x".getBytes(StandardCharsets.UTF_8), "yz".getBytes(StandardCharsets.UTF_8)
            },
            new int[] {2});
    ConstraintState s = new TokenConstraint(ByteDfa.ofRegex("xyz"), bare).newState();
    assertThat(s.forcedBytes(MAX)).hasSize(3);
    assertThat(s.jumpForward(0, MAX)).isNull();
    assertThat(JumpForward.completeUtf8Length(new byte[] {'a', (byte) 0xC3})).isEqualTo(1);
    assertThat(JumpForward.completeUtf8Length(new byte[] {'a', (byte) 0xC3, (byte) 0xA9}))
        .isEqualTo(3);
    assertThat(JumpForward.completeUtf8Length(new byte[] {(byte) 0xE2, (byte) 0x82})).isZero();
    // The end-of-sequence token never jumps.
    int eos = TOKENIZER.eosIds()[0];
    assertThat(after(COMPILER.regex("ab(cd)?"), "ab").jumpForward(eos, MAX)).isNull();
  }
}
