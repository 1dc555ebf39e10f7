package dev.ringmaster.engine.constraint;

import dev.ringmaster.model.tokenizer.Tokenizer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * The byte strings of a model's tokens, in a trie, for computing which tokens a constraint allows:
 * a token is walked byte by byte through the automaton, and tokens sharing a prefix share the walk.
 * Tokens without bytes (special tokens, ids the tokenizer does not assign) are never allowed; the
 * end-of-sequence ids are allowed exactly where the constraint accepts. Immutable.
 */
public final class TokenVocabulary {
  private final int size;
  private final byte[][] bytes;
  private final int[] eosIds;
  // The trie: node 0 is the root; children as first-child / next-sibling lists.
  private final int[] firstChild;
  private final int[] nextSibling;
  private final byte[] label;
  private final int[] firstToken; // a token whose bytes end at the node, -1 none
  private final int[] nextToken; // per token, the next one with the same bytes
  private final Function<String, int[]> encoder; // the tokenizer's split of a text; null: none
  private final int maxTokenBytes;

  /**
   * A vocabulary.
   *
   * @param size the model's vocabulary size (the logits row length; may exceed the tokenizer's)
   * @param bytes per token id below {@code bytes.length}, its bytes, or null when it has none
   * @param eosIds the ids that end generation
   */
  public TokenVocabulary(int size, byte[][] bytes, int[] eosIds) {
    this(size, bytes, eosIds, null);
  }

  /**
   * A vocabulary that can also split a text into tokens, as its tokenizer does (jump-forward
   * decoding retokenises forced text with it).
   *
   * @param encoder a text's token ids without special tokens, or null when there is no tokenizer
   */
  public TokenVocabulary(int size, byte[][] bytes, int[] eosIds, Function<String, int[]> encoder) {
    this.size = size;
    this.encoder = encoder;
    this.bytes = bytes.clone();
    this.eosIds = eosIds.clone();
    int nodes = 1;
    for (byte[] b : bytes) {
      nodes += b == null ? 0 : b.length;
    }
    int[] fc = new int[nodes];
    int[] ns = new int[nodes];
    byte[] lb = new byte[nodes];
    int[] ft = new int[nodes];
    Arrays.fill(fc, -1);
    Arrays.fill(ns, -1);
    Arrays.fill(ft, -1);
    this.nextToken = new int[Math.min(size, bytes.length)];
    Arrays.fill(nextToken, -1);
    Map<Long, Integer> child = new HashMap<>();
    int used = 1;
    int longest = 0;
    boolean[] eos = new boolean[size];
    for (int e : eosIds) {
      if (e >= 0 && e < size) {
        eos[e] = true;
      }
    }
    for (int t = 0; t < nextToken.length; t++) {
      byte[] b = bytes[t];
      if (b == null || b.length == 0 || eos[t]) {
        continue;
      }
      longest = Math.max(longest, b.length);
      int node = 0;
      for (byte x : b) {
        long key = ((long) node << 8) | (x & 0xff);
        Integer c = child.get(key);
        if (c == null) {
          c = used++;
          lb[c] = x;
          ns[c] = fc[node];
          fc[node] = c;
          child.put(key, c);
        }
        node = c;
      }
      nextToken[t] = ft[node];
      ft[node] = t;
    }
    this.firstChild = Arrays.copyOf(fc, used);
    this.nextSibling = Arrays.copyOf(ns, used);
    this.label = Arrays.copyOf(lb, used);
    this.firstToken = Arrays.copyOf(ft, used);
    this.maxTokenBytes = longest;
  }

  /**
   * The vocabulary of a tokenizer for a model whose logits rows have {@code modelVocab} entries.
   */
  public static TokenVocabulary of(Tokenizer tokenizer, int modelVocab, int[] eosIds) {
    int n = Math.min(modelVocab, tokenizer.vocabSize());
    byte[][] bytes = new byte[n][];
    for (int t = 0; t < n; t++) {
      bytes[t] = tokenizer.tokenBytes(t);
    }
    return new TokenVocabulary(modelVocab, bytes, eosIds, text -> tokenizer.encode(text, false));
  }

  /** The tokenizer's token ids of {@code text} (no special tokens), or null without a tokenizer. */
  int[] encode(String text) {
    return encoder == null ? null : encoder.apply(text);
  }

  /** The logits row length. */
  public int size() {
    return size;
  }

  /** The byte length of the longest token a mask can allow (end-of-sequence ids aside). */
  public int maxTokenBytes() {
    return maxTokenBytes;
  }

  /** The end-of-sequence ids. */
  public int[] eosIds() {
    return eosIds.clone();
  }

  /** Whether {@code token} is an end-of-sequence id. */
  public boolean isEos(int token) {
    for (int e : eosIds) {
      if (e == token) {
        return true;
      }
    }
    return false;
  }

  /** The bytes of a token, or null when it has none. */
  public byte[] bytes(int token) {
    return token >= 0 && token < bytes.length ? bytes[token] : null;
  }

  /**
   * Sets in {@code mask} the bit of every token whose bytes, read from {@code state}, stay inside
   * the automaton; returns whether any was set.
   */
  boolean allowed(ByteDfa dfa, int state, long[] mask) {
    return walk(dfa, 0, state, mask);
  }

  /** A recogniser stepped byte by byte along the trie and stepped back on the way up. */
  interface ByteWalker {
    /** Steps past byte {@code b} (0-255); false, leaving the walker as it was, when not allowed. */
    boolean push(int b);

    /** Undoes the last successful {@link #push}. */
    void pop();
  }

  /**
   * Sets in {@code mask} the bit of every token whose bytes {@code walker} accepts from where it
   * is; returns whether any was set. The walker is back where it was on return.
   */
  boolean allowed(ByteWalker walker, long[] mask) {
    return walk(walker, 0, mask);
  }

  /**
   * Whether {@code walker} accepts some token's bytes from where it is; stops at the first one. The
   * walker is back where it was on return.
   */
  boolean anyAllowed(ByteWalker walker) {
    return any(walker, 0);
  }

  /** Whether some token's bytes, read from {@code state}, stay inside the automaton. */
  boolean anyAllowed(ByteDfa dfa, int state) {
    return any(dfa, 0, state);
  }

  private boolean any(ByteWalker walker, int node) {
    for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
      if (!walker.push(label[c] & 0xff)) {
        continue;
      }
      boolean found = firstToken[c] >= 0 || any(walker, c);
      walker.pop();
      if (found) {
        return true;
      }
    }
    return false;
  }

  private boolean any(ByteDfa dfa, int node, int state) {
    for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
      int s = dfa.next(state, label[c]);
      if (s >= 0 && (firstToken[c] >= 0 || any(dfa, c, s))) {
        return true;
      }
    }
    return false;
  }

  private boolean walk(ByteWalker walker, int node, long[] mask) {
    boolean any = false;
    for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
      if (!walker.push(label[c] & 0xff)) {
        continue;
      }
      for (int t = firstToken[c]; t >= 0; t = nextToken[t]) {
        mask[t >>> 6] |= 1L << t;
        any = true;
      }
      any |= walk(walker, c, mask);
      walker.pop();
    }
    return any;
  }

  private boolean walk(ByteDfa dfa, int node, int state, long[] mask) {
    boolean any = false;
    for (int c = firstChild[node]; c >= 0; c = nextSibling[c]) {
      int s = dfa.next(state, label[c]);
      if (s < 0) {
        continue;
      }
      for (int t = firstToken[c]; t >= 0; t = nextToken[t]) {
        mask[t >>> 6] |= 1L << t;
        any = true;
      }
      any |= walk(dfa, c, s, mask);
    }
    return any;
  }
}
