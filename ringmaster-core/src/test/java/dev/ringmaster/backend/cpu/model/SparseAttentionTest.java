package dev.ringmaster.backend.cpu.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.runtime.BatchLayout;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.testing.GoldenFixture;
import dev.ringmaster.testing.ReferenceJson;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * DeepSeek Sparse Attention on the CPU: the selection rule, dense attention where the context fits
 * in {@code index_topk}, and the DSA fixtures' dense continuation (recorded from transformers with
 * {@code index_topk} above every context) reproduced by the same model with a raised top-k.
 */
class SparseAttentionTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  static List<GoldenFixture> dsaFixtures() {
    return GoldenFixture.all().stream()
        .filter(f -> f.name().startsWith("deepseek_v32") || f.name().startsWith("glm_moe_dsa"))
        .toList();
  }

  @Test
  void thereAreFixturesOfBothModelTypes() {
    assertThat(dsaFixtures()).extracting(GoldenFixture::name).hasSize(2);
  }

  @Test
  void topKKeepsTheBestScoresAndBreaksTiesTowardTheEarlierPosition() {
    float[] scores = {0.5f, 0f, 2f, -0f, 0f, 2f, -1f};
    assertThat(CpuIndexer.topK(scores, 1)).containsExactly(2);
    assertThat(CpuIndexer.topK(scores, 3)).containsExactly(0, 2, 5);
    // Three scores of zero (one of them -0) compete for the last place: the earliest wins.
    assertThat(CpuIndexer.topK(scores, 4)).containsExactly(0, 1, 2, 5);
    assertThat(CpuIndexer.topK(scores, 5)).containsExactly(0, 1, 2, 3, 5);
  }

  /** A copy of a fixture whose config.json has {@code index_topk} set to {@code topK}. */
  private static Path withTopK(GoldenFixture f, Path tmp, int topK) throws IOException {
    Path dir = tmp.resolve(f.name());
    Files.createDirectories(dir);
    try (Stream<Path> files = Files.list(f.dir())) {
      for (Path p : files.toList()) {
        Files.copy(p, dir.resolve(p.getFileName()));
      }
    }
    Path cfg = dir.resolve("config.json");
    ObjectNode root = (ObjectNode) JSON.readTree(cfg.toFile());
    root.put("index_topk", topK);
    Files.writeString(cfg, JSON.writeValueAsString(root));
    return dir;
  }

  private static int[] ints(JsonNode n) {
    int[] out = new int[n.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = n.get(i).asInt();
    }
    return out;
  }

  private static int[] greedy(CausalLm model, int[] prompt, int n) {
    int vocab = model.config().vocabSize();
    KvCache cache = model.newCache();
    float[] logits = model.forwardAll(prompt, cache);
    int next = CpuOps.argmax(logits, (prompt.length - 1) * vocab, vocab);
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = next;
      logits = model.forwardAll(new int[] {next}, cache);
      next = CpuOps.argmax(logits, 0, vocab);
    }
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dsaFixtures")
  void denseAttentionGivesTransformersDenseContinuation(GoldenFixture f, @TempDir Path tmp)
      throws IOException {
    JsonNode ref = ReferenceJson.ofFixture(f.dir());
    int[] dense = ints(ref.get("dense_greedy_ids"));
    assertThat(dense).as("the fixture is really sparse").isNotEqualTo(f.greedyIds());
    try (CausalLm model = CausalLm.load(withTopK(f, tmp, 1_000_000))) {
      assertThat(greedy(model, f.promptIds(), dense.length)).containsExactly(dense);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dsaFixtures")
  void contextsUpToTopKAttendToEveryPosition(GoldenFixture f, @TempDir Path tmp)
      throws IOException {
    try (CausalLm sparse = CausalLm.load(f.dir());
        CausalLm dense = CausalLm.load(withTopK(f, tmp, 1_000_000))) {
      int topK = sparse.config().sparseAttention().topK();
      int[] prompt = Arrays.copyOf(f.promptIds(), topK);
      float[] a = sparse.forwardAll(prompt, sparse.newCache());
      float[] b = dense.forwardAll(prompt, dense.newCache());
      assertThat(a).as("equal by definition, bit for bit").isEqualTo(b);
      int[] longer = Arrays.copyOf(f.promptIds(), topK + 4);
      float[] c = sparse.forwardAll(longer, sparse.newCache());
      float[] d = dense.forwardAll(longer, dense.newCache());
      int vocab = sparse.config().vocabSize();
      float moved = 0;
      for (int i = topK * vocab; i < c.length; i++) {
        moved = Math.max(moved, Math.abs(c[i] - d[i]));
      }
      assertThat(moved).as("past index_topk the selection matters").isGreaterThan(1e-3f);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dsaFixtures")
  void aBatchOfSequencesSelectsPerSequence(GoldenFixture f) {
    try (CausalLm model = CausalLm.load(f.dir())) {
      int vocab = model.config().vocabSize();
      int[] p = f.promptIds();
      int[] q = Arrays.copyOfRange(p, 5, p.length);
      // Sequence 0 decodes one token after a cached prompt, sequence 1 prefills from scratch.
      KvCache c0 = model.newCache();
      model.forwardAll(Arrays.copyOf(p, p.length - 1), c0);
      KvCache c1 = model.newCache();
      int[] tokens = new int[1 + q.length];
      tokens[0] = p[p.length - 1];
      System.arraycopy(q, 0, tokens, 1, q.length);
      int[] pos = new int[tokens.length];
      pos[0] = p.length - 1;
      for (int i = 0; i < q.length; i++) {
        pos[1 + i] = i;
      }
      BatchLayout layout = new BatchLayout(new int[] {0, 1, tokens.length}, pos);
      float[] both =
          model.forward(tokens, layout, new KvCache[] {c0, c1}, new int[] {0, tokens.length - 1});
      float[] alone0 = model.forwardAll(p, model.newCache());
      float[] alone1 = model.forwardAll(q, model.newCache());
      for (int j = 0; j < vocab; j++) {
        assertThat(both[j])
            .isCloseTo(
                alone0[(p.length - 1) * vocab + j], org.assertj.core.data.Offset.offset(1e-4f));
        assertThat(both[vocab + j])
            .isCloseTo(
                alone1[(q.length - 1) * vocab + j], org.assertj.core.data.Offset.offset(1e-4f));
      }
    }
  }
}
