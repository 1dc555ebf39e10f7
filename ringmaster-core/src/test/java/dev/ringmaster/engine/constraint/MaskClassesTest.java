package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringmaster.model.tokenizer.Tokenizer;
import dev.ringmaster.testing.RepoPaths;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * Masks per {@link MaskClasses mask class} equal the masks computed state by state, for every state
 * of automata from the schema suite, counted strings, multipleOf and patterns; a long counted
 * string collapses to a few classes per token byte.
 */
class MaskClassesTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String[] PIECES = {
    "a", "b", "ab", "\"", "\\", "\\u00", "{", "}", ":", ",", "1", "23", "0.", " ", "é", "€", "😀",
    "true", "null", "-", "e+", "\n", "[", "]", "x", "Z", "\t", "\u0001"
  };

  /**
   * Every single byte, {@code extra} tokens of 2 to {@code maxLen} bytes made of JSON-ish pieces
   * (cut anywhere, so some end inside a character), an id without bytes and end-of-sequence.
   */
  private static TokenVocabulary vocab(long seed, int extra, int maxLen) {
    return vocab(seed, extra, maxLen, 0);
  }

  /** As {@link #vocab(long, int, int)} with logits rows of at least {@code rowLength}. */
  private static TokenVocabulary vocab(long seed, int extra, int maxLen, int rowLength) {
    SplittableRandom rnd = new SplittableRandom(seed);
    List<byte[]> tokens = new ArrayList<>();
    for (int b = 0; b < 256; b++) {
      tokens.add(new byte[] {(byte) b});
    }
    for (int i = 0; i < extra; i++) {
      int len = 2 + rnd.nextInt(maxLen - 1);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      while (out.size() < len) {
        out.writeBytes(PIECES[rnd.nextInt(PIECES.length)].getBytes(StandardCharsets.UTF_8));
      }
      byte[] whole = out.toByteArray();
      tokens.add(java.util.Arrays.copyOf(whole, len));
    }
    tokens.add(null); // a special token: never allowed
    int eos = tokens.size();
    tokens.add(null);
    int size = Math.max(eos + 3, rowLength);
    return new TokenVocabulary(size, tokens.toArray(new byte[0][]), new int[] {eos});
  }

  /** The mask of {@code state} by walking each token's bytes alone (no trie, no cache). */
  private static long[] bruteForceMask(ByteDfa dfa, TokenVocabulary v, int state) {
    long[] mask = new long[(v.size() + 63) >>> 6];
    for (int t = 0; t < v.size(); t++) {
      boolean allowed;
      if (v.isEos(t)) {
        allowed = dfa.accepting(state);
      } else {
        byte[] b = v.bytes(t);
        int s = b == null || b.length == 0 ? -1 : state;
        for (int i = 0; b != null && i < b.length && s >= 0; i++) {
          s = dfa.next(s, b[i]);
        }
        allowed = s >= 0;
      }
      if (allowed) {
        mask[t >>> 6] |= 1L << t;
      }
    }
    return mask;
  }

  private static void assertMasksPerStateAgree(String what, ByteDfa dfa, TokenVocabulary v) {
    TokenConstraint grouped = new TokenConstraint(dfa, v);
    TokenConstraint perState = new TokenConstraint(dfa, v, 0);
    assertThat(grouped.classes().refined()).as(what).isTrue();
    assertThat(perState.classes().refined()).as(what).isFalse();
    assertThat(perState.classes().count()).as(what).isEqualTo(dfa.states());
    for (int s = 0; s < dfa.states(); s++) {
      long[] expected = bruteForceMask(dfa, v, s);
      assertThat(grouped.mask(s)).as("%s: state %d", what, s).isEqualTo(expected);
      assertThat(perState.mask(s)).as("%s: state %d", what, s).isEqualTo(expected);
      assertThat(grouped.continues(s)).as(what).isEqualTo(perState.continues(s));
    }
  }

  private static ByteDfa schema(String json) throws Exception {
    return ByteDfa.of(JsonSchemaCompiler.compile(JSON.readTree(json)));
  }

  @Test
  void masksOfSuiteSchemasEqualPerStateMasks() {
    TokenVocabulary v = vocab(1, 600, 6);
    List<SchemaSuite.Entry> suite = SchemaSuite.generate(2026_12_01L, 200, 200);
    for (int i = 0; i < suite.size(); i += 5) {
      JsonNode schema = suite.get(i).schema();
      assertMasksPerStateAgree(
          schema.toString(), ByteDfa.of(JsonSchemaCompiler.compile(schema)), v);
    }
  }

  @Test
  void masksOfCountedStringsNumbersAndPatternsEqualPerStateMasks() throws Exception {
    for (int maxLen : new int[] {3, 9, 24}) {
      TokenVocabulary v = vocab(maxLen, 800, maxLen);
      assertMasksPerStateAgree("minLength 60", schema("{\"type\":\"string\",\"minLength\":60}"), v);
      assertMasksPerStateAgree(
          "minLength 5 maxLength 70",
          schema("{\"type\":\"string\",\"minLength\":5,\"maxLength\":70}"),
          v);
      assertMasksPerStateAgree(
          "object with a counted string",
          schema(
              "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"minLength\":40},"
                  + "\"n\":{\"type\":\"integer\",\"multipleOf\":7}},\"required\":[\"text\",\"n\"]}"),
          v);
      assertMasksPerStateAgree(
          "multipleOf 12", schema("{\"type\":\"integer\",\"multipleOf\":12}"), v);
      assertMasksPerStateAgree(
          "pattern", schema("{\"type\":\"string\",\"pattern\":\"^[a-z]{2,30}x(ab|1){3,9}$\"}"), v);
      assertMasksPerStateAgree("regex", ByteDfa.ofRegex("(ab|é|\"){4,50}[0-9]+(\\.5)?"), v);
      assertMasksPerStateAgree("choice", ByteDfa.ofChoices(List.of("true", "tr", "null", "ab")), v);
    }
  }

  /**
   * With every string of up to three bytes over a small alphabet as a token, any two states a token
   * tells apart must be in different classes: the classes cannot be coarser than the masks.
   */
  @Test
  void everyShortStringAsATokenStillAgrees() throws Exception {
    byte[] alphabet = "ab\"\\1{:".getBytes(StandardCharsets.UTF_8);
    List<byte[]> tokens = new ArrayList<>();
    for (int b = 0; b < 256; b++) {
      tokens.add(new byte[] {(byte) b});
    }
    for (byte x : alphabet) {
      for (byte y : alphabet) {
        tokens.add(new byte[] {x, y});
        for (byte z : alphabet) {
          tokens.add(new byte[] {x, y, z});
        }
      }
    }
    int eos = tokens.size();
    tokens.add(null);
    TokenVocabulary v =
        new TokenVocabulary(eos + 1, tokens.toArray(new byte[0][]), new int[] {eos});
    assertMasksPerStateAgree(
        "counted object",
        schema(
            "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"minLength\":12,"
                + "\"maxLength\":20}},\"required\":[\"a\"]}"),
        v);
    assertMasksPerStateAgree("regex", ByteDfa.ofRegex("(a|b\"){3,12}:1*"), v);
  }

  /**
   * The benchmark's schema, a string of at least 1,024 characters, has some 39,000 states (one set
   * per count) but only about 14 classes per byte of the longest DeepSeek-V3 token (128 bytes):
   * counts farther than a token from the bound are one class. Sampled states' masks agree.
   */
  @Test
  void aLongCountedStringCollapsesToFewClassesOverTheDeepSeekVocabulary() throws Exception {
    Tokenizer tokenizer = Tokenizer.load(RepoPaths.require(".cache/deepseek-v3-tokenizer"));
    TokenVocabulary v = TokenVocabulary.of(tokenizer, 129_280, tokenizer.eosIds());
    assertThat(v.maxTokenBytes()).isEqualTo(128);
    ByteDfa dfa =
        schema(
            "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"minLength\":1024}},"
                + "\"required\":[\"text\"]}");
    assertThat(dfa.states()).isGreaterThan(30_000);
    TokenConstraint c = new TokenConstraint(dfa, v);
    MaskClasses classes = c.classes();
    assertThat(classes.refined()).isTrue();
    assertThat(classes.count()).isBetween(128, 2_000);
    // Counts farther than 128 bytes from the bound: one class per position inside a character.
    MaskClasses shortTokens = MaskClasses.of(dfa, 4, MaskClasses.WORK_BUDGET);
    assertThat(shortTokens.count()).isLessThan(100);
    SplittableRandom rnd = new SplittableRandom(3);
    for (int i = 0; i < 40; i++) {
      int s = rnd.nextInt(dfa.states());
      assertThat(c.mask(s)).as("state %d", s).isEqualTo(bruteForceMask(dfa, v, s));
    }
  }

  /**
   * Over a 129,280-long logits row, too many classes to compute at compile time: the background
   * prefetch fills every class's mask, each equal to the state's own.
   */
  @Test
  void prefetchFillsEveryClass() throws Exception {
    TokenVocabulary v = vocab(5, 300, 24, 129_280);
    ByteDfa dfa = schema("{\"type\":\"string\",\"minLength\":200}");
    TokenConstraint c = new TokenConstraint(dfa, v);
    long words = (long) c.classes().count() * ((v.size() + 63) >>> 6);
    assertThat(words).isBetween(1L << 19, 1L << 22);
    int before = 0;
    for (int s = 0; s < dfa.states(); s++) {
      before += c.cachedMask(s) != null ? 1 : 0;
    }
    assertThat(before).isZero();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      c.prefetch(pool);
      c.prefetch(pool); // once per constraint
      long deadline = System.nanoTime() + 30_000_000_000L;
      int cached = 0;
      while (System.nanoTime() < deadline) {
        cached = 0;
        for (int s = 0; s < dfa.states(); s++) {
          cached += c.cachedMask(s) != null ? 1 : 0;
        }
        if (cached == dfa.states()) {
          break;
        }
        Thread.sleep(10);
      }
      assertThat(cached).isEqualTo(dfa.states());
    } finally {
      pool.shutdown();
    }
    for (int s = 0; s < dfa.states(); s += 7) {
      assertThat(c.cachedMask(s)).as("state %d", s).isEqualTo(bruteForceMask(dfa, v, s));
    }
  }

  @Test
  void theWorkBoundFallsBackToOneClassPerState() throws Exception {
    ByteDfa dfa = schema("{\"type\":\"string\",\"minLength\":30}");
    MaskClasses bounded = MaskClasses.of(dfa, 16, 1_000);
    assertThat(bounded.refined()).isFalse();
    assertThat(bounded.count()).isEqualTo(dfa.states());
    for (int s = 0; s < dfa.states(); s++) {
      assertThat(bounded.classOf(s)).isEqualTo(s);
    }
    MaskClasses free = MaskClasses.of(dfa, 16, MaskClasses.WORK_BUDGET);
    assertThat(free.refined()).isTrue();
    assertThat(free.count()).isLessThan(dfa.states());
  }
}
