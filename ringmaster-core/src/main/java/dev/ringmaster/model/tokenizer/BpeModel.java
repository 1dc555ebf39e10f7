package dev.ringmaster.model.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The BPE model: a vocabulary and ranked merges. A pre-token starts as one symbol per character and
 * the adjacent pair with the lowest merge rank (leftmost on ties) is merged until none applies,
 * which is what Hugging Face does. A heap of candidate pairs keeps long words at O(n log n).
 */
final class BpeModel {
  /** Words longer than this are not cached; they are rare and would crowd the cache. */
  private static final int MAX_CACHED_LENGTH = 256;

  private static final int CACHE_CAPACITY = 200_000;

  private final Map<String, Integer> vocab;
  private final Map<Long, long[]> merges; // (left id, right id) -> {rank, merged id}
  private final Integer unkId;
  private final boolean byteFallback;
  private final boolean fuseUnk;
  private final boolean ignoreMerges;
  private final Map<String, int[]> cache = new ConcurrentHashMap<>();

  private BpeModel(
      Map<String, Integer> vocab,
      Map<Long, long[]> merges,
      Integer unkId,
      boolean byteFallback,
      boolean fuseUnk,
      boolean ignoreMerges) {
    this.vocab = vocab;
    this.merges = merges;
    this.unkId = unkId;
    this.byteFallback = byteFallback;
    this.fuseUnk = fuseUnk;
    this.ignoreMerges = ignoreMerges;
  }

  /** Builds the model from the {@code model} section of tokenizer.json. */
  static BpeModel fromJson(JsonNode node) {
    String type = Json.text(node, "type");
    if (type != null && !type.equals("BPE")) {
      throw new IllegalArgumentException(
          "unsupported model type '" + type + "' (only BPE is supported)");
    }
    if (type == null && !node.has("merges")) {
      throw new IllegalArgumentException("model has no 'type' and no 'merges': not a BPE model");
    }
    for (String affix : new String[] {"continuing_subword_prefix", "end_of_word_suffix"}) {
      String value = Json.text(node, affix);
      if (value != null && !value.isEmpty()) {
        throw new IllegalArgumentException("BPE model with '" + affix + "' is not supported");
      }
    }
    Map<String, Integer> vocab = new HashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields =
        Json.required(node, "vocab", "BPE model").properties().iterator();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> e = fields.next();
      vocab.put(e.getKey(), e.getValue().asInt());
    }
    Map<Long, long[]> merges = new HashMap<>();
    int rank = 0;
    for (JsonNode merge : Json.required(node, "merges", "BPE model")) {
      String left;
      String right;
      if (merge.isArray() && merge.size() == 2) {
        left = merge.get(0).asText();
        right = merge.get(1).asText();
      } else if (merge.isTextual() && merge.asText().split(" ", -1).length == 2) {
        String[] parts = merge.asText().split(" ", -1);
        left = parts[0];
        right = parts[1];
      } else {
        throw new IllegalArgumentException(
            "merge #" + rank + " must be \"a b\" or [\"a\", \"b\"], got " + merge);
      }
      Integer l = vocab.get(left);
      Integer r = vocab.get(right);
      Integer m = vocab.get(left + right);
      if (l == null || r == null || m == null) {
        throw new IllegalArgumentException(
            "merge #" + rank + " " + merge + " uses a token missing from the vocab");
      }
      merges.putIfAbsent(pairKey(l, r), new long[] {rank, m});
      rank++;
    }
    String unk = Json.text(node, "unk_token");
    Integer unkId = null;
    if (unk != null) {
      unkId = vocab.get(unk);
      if (unkId == null) {
        throw new IllegalArgumentException("unk_token '" + unk + "' is not in the vocab");
      }
    }
    return new BpeModel(
        vocab,
        merges,
        unkId,
        Json.bool(node, "byte_fallback", false),
        Json.bool(node, "fuse_unk", false),
        Json.bool(node, "ignore_merges", false));
  }

  Map<String, Integer> vocab() {
    return vocab;
  }

  /** Token ids of one pre-token. */
  int[] tokenize(String word) {
    if (word.length() > MAX_CACHED_LENGTH) {
      return merge(word);
    }
    int[] cached = cache.get(word);
    if (cached == null) {
      cached = merge(word);
      if (cache.size() >= CACHE_CAPACITY) {
        cache.clear();
      }
      cache.put(word, cached);
    }
    return cached;
  }

  private int[] merge(String word) {
    if (ignoreMerges) {
      Integer whole = vocab.get(word);
      if (whole != null) {
        return new int[] {whole};
      }
    }
    Symbols s = initialSymbols(word);
    int n = s.count;
    if (n == 0) {
      return new int[0];
    }
    int[] ids = s.ids;
    int[] prev = new int[n];
    int[] next = new int[n];
    for (int i = 0; i < n; i++) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    // Heap entries: rank in the high 32 bits, position in the low 32, so ties go leftmost.
    PriorityQueue<Long> heap = new PriorityQueue<>();
    for (int i = 0; i + 1 < n; i++) {
      push(heap, ids, i, i + 1);
    }
    int alive = n;
    while (!heap.isEmpty()) {
      long entry = heap.poll();
      int pos = (int) entry;
      long rank = entry >>> 32;
      int right = next[pos];
      if (ids[pos] < 0 || right < 0) {
        continue;
      }
      long[] merge = merges.get(pairKey(ids[pos], ids[right]));
      if (merge == null || merge[0] != rank) {
        continue; // stale: one side was merged into something else since this entry was pushed
      }
      ids[pos] = (int) merge[1];
      ids[right] = -1;
      next[pos] = next[right];
      if (next[right] >= 0) {
        prev[next[right]] = pos;
      }
      alive--;
      if (prev[pos] >= 0) {
        push(heap, ids, prev[pos], pos);
      }
      if (next[pos] >= 0) {
        push(heap, ids, pos, next[pos]);
      }
    }
    int[] out = new int[alive];
    int k = 0;
    for (int i = 0; i >= 0; i = next[i]) {
      out[k++] = ids[i];
    }
    return out;
  }

  private void push(PriorityQueue<Long> heap, int[] ids, int left, int right) {
    long[] merge = merges.get(pairKey(ids[left], ids[right]));
    if (merge != null) {
      heap.add((merge[0] << 32) | left);
    }
  }

  private record Symbols(int[] ids, int count) {}

  /** One symbol per character; unknown characters become byte tokens or the unk token. */
  private Symbols initialSymbols(String word) {
    int[] ids = new int[word.length() * 4];
    int n = 0;
    boolean lastWasUnk = false;
    for (int i = 0; i < word.length(); ) {
      int cp = word.codePointAt(i);
      String ch = word.substring(i, i + Character.charCount(cp));
      i += ch.length();
      Integer id = vocab.get(ch);
      if (id != null) {
        ids[n++] = id;
        lastWasUnk = false;
        continue;
      }
      if (byteFallback && appendByteTokens(ch, ids, n)) {
        n += ch.getBytes(StandardCharsets.UTF_8).length;
        lastWasUnk = false;
        continue;
      }
      if (unkId == null) {
        throw new IllegalArgumentException(
            "character U+"
                + Integer.toHexString(cp).toUpperCase(java.util.Locale.ROOT)
                + " is not in the vocab and the model has no unk_token");
      }
      if (!(fuseUnk && lastWasUnk)) {
        ids[n++] = unkId;
      }
      lastWasUnk = true;
    }
    return new Symbols(ids, n);
  }

  /** Writes the {@code <0xXX>} tokens of a character; false if any of them is missing. */
  private boolean appendByteTokens(String ch, int[] ids, int at) {
    byte[] bytes = ch.getBytes(StandardCharsets.UTF_8);
    for (int b = 0; b < bytes.length; b++) {
      Integer id = vocab.get(String.format("<0x%02X>", bytes[b] & 0xFF));
      if (id == null) {
        return false;
      }
      ids[at + b] = id;
    }
    return true;
  }

  private static long pairKey(int left, int right) {
    return ((long) left << 32) | (right & 0xFFFFFFFFL);
  }
}
