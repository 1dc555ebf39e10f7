package dev.ringmaster.engine.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The compiler's cache: concurrent first requests for one schema share one compilation (all get the
 * same constraint), and a refused schema is refused to every request and not kept.
 */
class ConstraintCompilerCacheTest {
  private static final int EOS = 256;
  private static final int THREADS = 8;

  /** Every single byte and end-of-sequence. */
  private static TokenVocabulary vocab() {
    byte[][] bytes = new byte[EOS + 1][];
    for (int b = 0; b < 256; b++) {
      bytes[b] = new byte[] {(byte) b};
    }
    return new TokenVocabulary(EOS + 1, bytes, new int[] {EOS});
  }

  private static List<Object> together(ConstraintCompiler c, JsonNode schema) throws Exception {
    CyclicBarrier start = new CyclicBarrier(THREADS);
    List<Object> out = new ArrayList<>();
    try (ExecutorService ex = Executors.newFixedThreadPool(THREADS)) {
      List<Future<Object>> fs = new ArrayList<>();
      for (int i = 0; i < THREADS; i++) {
        fs.add(
            ex.submit(
                () -> {
                  start.await();
                  try {
                    return c.jsonSchema(schema);
                  } catch (RuntimeException e) {
                    return e;
                  }
                }));
      }
      for (Future<Object> f : fs) {
        out.add(f.get());
      }
    }
    return out;
  }

  @Test
  void concurrentFirstRequestsShareOneCompilation() throws Exception {
    ConstraintCompiler c = new ConstraintCompiler(vocab());
    // a counted string: thousands of DFA states, long enough to compile that the threads overlap
    JsonNode schema =
        new ObjectMapper()
            .readTree(
                "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
                    + "\"minLength\":400}},\"required\":[\"text\"]}");
    List<Object> got = together(c, schema);
    assertThat(got).allSatisfy(o -> assertThat(o).isInstanceOf(TokenConstraint.class));
    assertThat(got).allSatisfy(o -> assertThat(o).isSameAs(got.getFirst()));
    assertThat(c.jsonSchema(schema)).isSameAs(got.getFirst());
  }

  @Test
  void aRefusedSchemaIsRefusedToEveryRequestAndNotKept() throws Exception {
    ConstraintCompiler c = new ConstraintCompiler(vocab());
    JsonNode refused = new ObjectMapper().readTree("{\"minLength\": 3}");
    Class<?> alone;
    try {
      c.jsonSchema(refused);
      throw new AssertionError("the typeless string keyword was accepted");
    } catch (RuntimeException e) {
      alone = e.getClass();
    }
    List<Object> got = together(c, refused);
    Class<?> expected = alone;
    assertThat(got).allSatisfy(o -> assertThat(o).isExactlyInstanceOf(expected));
    assertThatThrownBy(() -> c.jsonSchema(refused)).isExactlyInstanceOf(expected);
  }
}
