package dev.ringmaster.runtime.sampling;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The CPU reference sampler: one row of logits to one token, in a few vectorised passes over
 * primitive arrays (no sort, no boxing). Every device sampler implements the same steps:
 *
 * <ol>
 *   <li>logit bias: {@code l[t] += bias[t]};
 *   <li>repetition penalty {@code rp} on every token seen in the prompt or the output: {@code l > 0
 *       ? l / rp : l * rp}; then frequency and presence penalties: {@code l -= count * f + (count >
 *       0 ? p : 0)}, count = occurrences in the output (vLLM and SGLang order); then the row's
 *       allowed-token mask, if any: every other token gets {@code -inf};
 *   <li>logprobs, when asked: log-softmax of these logits (before temperature);
 *   <li>greedy (temperature 0 or top-k 1): the argmax, lowest id on ties;
 *   <li>else weights {@code w = exp((l - max) / T)}; top-k keeps logits {@code >=} the k-th largest
 *       (every tie with it stays); top-p keeps the tokens whose weight is at least the largest
 *       {@code v} such that the top-k weights {@code >= v} reach {@code topP} of the top-k mass
 *       (every tie stays); min-p keeps {@code w >= minP} (the max has weight 1);
 *   <li>the draw: by inverse CDF in token-id order over the kept weights, with the Philox uniform
 *       of (seed, step, round). Top-p is applied by rejection: a draw from the top-k and min-p set
 *       is accepted when the top-k mass of weights strictly above it is below {@code topP} of the
 *       top-k mass, else the next round draws from the weights above it. The accepted token follows
 *       the filtered distribution exactly; rejections happen with probability at most {@code 1 -
 *       topP} per round, and after {@value #MAX_ROUNDS} of them the argmax is taken.
 * </ol>
 *
 * Not thread-safe: one per thread (it owns scratch of a few vocabulary-sized arrays).
 */
public final class RowSampler {
  /**
   * Rejection rounds before the argmax is taken instead (reached with odds below 1e-60 at p 0.9).
   */
  public static final int MAX_ROUNDS = 64;

  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int CHUNK = 1024;
  private static final int HEAP_TOP_K = 4096;

  private final int vocab;
  private final float[] adjusted;
  private final float[] weights;
  private final float[] chunkSums;
  private final float[] select;

  /** A sampler for rows of {@code vocab} logits. */
  public RowSampler(int vocab) {
    if (vocab < 1) {
      throw new IllegalArgumentException("vocab must be >= 1, got " + vocab);
    }
    this.vocab = vocab;
    this.adjusted = new float[vocab];
    this.weights = new float[vocab];
    this.chunkSums = new float[(vocab + CHUNK - 1) / CHUNK];
    this.select = new float[vocab];
  }

  /** The row length this sampler takes. */
  public int vocab() {
    return vocab;
  }

  /**
   * Chooses row {@code r} of {@code batch} from {@code logits[off, off + vocab)} and writes its
   * token and requested logprobs into {@code out}.
   */
  public void sample(float[] logits, int off, SamplingBatch batch, int r, SampledTokens out) {
    float[] l = logits;
    int base = off;
    int[] seenStart = batch.seenStart();
    int[] biasStart = batch.biasStart();
    boolean penalize = batch.hasPenalties(r) && seenStart[r + 1] > seenStart[r];
    long[] mask = batch.allowedTokens(r);
    if (penalize || biasStart[r + 1] > biasStart[r] || mask != null) {
      System.arraycopy(logits, off, adjusted, 0, vocab);
      l = adjusted;
      base = 0;
      adjust(batch, r, penalize);
      if (mask != null) {
        applyMask(mask, r);
      }
    }
    float max = max(l, base);
    int argmax = firstIndexOf(l, base, max);
    int top = batch.topLogprobs()[r];
    float temperature = batch.temperature()[r];
    int topK = batch.topK()[r];
    int token =
        temperature == 0 || topK == 1 || argmax < 0
            ? (argmax < 0 ? dev.ringmaster.backend.cpu.CpuOps.argmax(l, base, vocab) : argmax)
            : draw(l, base, max, argmax, batch, r);
    out.tokens()[r] = token;
    if (top >= 0) {
      logprobs(l, base, max, token, r, top, out);
    }
  }

  private void adjust(SamplingBatch b, int r, boolean penalize) {
    int[] ids = b.biasTokens();
    float[] values = b.biasValues();
    for (int e = b.biasStart()[r]; e < b.biasStart()[r + 1]; e++) {
      adjusted[checked(ids[e], "logit bias")] += values[e];
    }
    if (!penalize) {
      return;
    }
    float rep = b.repetitionPenalty()[r];
    float freq = b.frequencyPenalty()[r];
    float pres = b.presencePenalty()[r];
    int[] seen = b.seenTokens();
    int[] counts = b.seenCounts();
    for (int e = b.seenStart()[r]; e < b.seenStart()[r + 1]; e++) {
      int t = checked(seen[e], "seen token");
      float v = adjusted[t];
      if (rep != 1f) {
        v = v > 0 ? v / rep : v * rep;
      }
      int c = counts[e];
      adjusted[t] = v - (c * freq + (c > 0 ? pres : 0f));
    }
  }

  private void applyMask(long[] mask, int r) {
    boolean any = false;
    // Word by word: a word of all-allowed tokens (most of them, inside a JSON string) is skipped.
    for (int from = 0; from < vocab; from += 64) {
      int w = from >>> 6;
      long bits = w < mask.length ? mask[w] : 0L;
      int to = Math.min(vocab, from + 64);
      if (bits == -1L && to - from == 64) {
        any = true;
        continue;
      }
      for (int t = from; t < to; t++) {
        if ((bits & (1L << t)) == 0) {
          adjusted[t] = Float.NEGATIVE_INFINITY;
        } else {
          any = true;
        }
      }
    }
    if (!any) {
      throw new IllegalArgumentException("row " + r + ": its allowed-token mask allows no token");
    }
  }

  private int checked(int token, String what) {
    if (token < 0 || token >= vocab) {
      throw new IllegalArgumentException(
          what + " id " + token + " is outside the vocabulary (0.." + (vocab - 1) + ")");
    }
    return token;
  }

  private int draw(float[] l, int base, float max, int argmax, SamplingBatch b, int r) {
    float invT = 1f / b.temperature()[r];
    int k = b.topK()[r];
    float kth = k > 0 && k < vocab ? kthLargest(l, base, k) : Float.NEGATIVE_INFINITY;
    double massK = weigh(l, base, max, invT, kth);
    float topP = b.topP()[r];
    float minP = b.minP()[r];
    long seed = b.seed()[r];
    long step = b.step()[r];
    float pivot = -1f; // candidates have weight > pivot (every weight is >= 0)
    for (int round = 0; round < MAX_ROUNDS; round++) {
      double mass = round == 0 && minP == 0 ? massK : chunkCandidates(pivot, minP);
      if (!(mass > 0)) {
        break;
      }
      double target = Philox.uniform(seed, step, round) * mass;
      int x = walk(target, pivot, minP);
      if (topP >= 1f || massAbove(weights[x]) < (double) topP * massK) {
        return x;
      }
      pivot = weights[x];
    }
    return argmax;
  }

  /** weights = exp((l - max) * invT) where l >= kth, else 0; chunk sums; returns the total. */
  private double weigh(float[] l, int base, float max, float invT, float kth) {
    double total = 0;
    for (int c = 0; c < chunkSums.length; c++) {
      int from = c * CHUNK;
      int to = Math.min(vocab, from + CHUNK);
      int i = from;
      FloatVector acc = FloatVector.zero(F);
      for (; i <= to - F.length(); i += F.length()) {
        FloatVector v = FloatVector.fromArray(F, l, base + i);
        FloatVector w = v.sub(max).mul(invT).lanewise(VectorOperators.EXP);
        w = w.blend(0f, v.compare(VectorOperators.LT, kth));
        w.intoArray(weights, i);
        acc = acc.add(w);
      }
      float s = acc.reduceLanes(VectorOperators.ADD);
      for (; i < to; i++) {
        float v = l[base + i];
        float w = v >= kth ? (float) Math.exp((v - max) * invT) : 0f;
        weights[i] = w;
        s += w;
      }
      chunkSums[c] = s;
      total += s;
    }
    return total;
  }

  /** Chunk sums of the candidate weights (w > pivot and w >= minP); returns the total. */
  private double chunkCandidates(float pivot, float minP) {
    double total = 0;
    for (int c = 0; c < chunkSums.length; c++) {
      int from = c * CHUNK;
      int to = Math.min(vocab, from + CHUNK);
      int i = from;
      FloatVector acc = FloatVector.zero(F);
      for (; i <= to - F.length(); i += F.length()) {
        FloatVector w = FloatVector.fromArray(F, weights, i);
        VectorMask<Float> keep =
            w.compare(VectorOperators.GT, pivot).and(w.compare(VectorOperators.GE, minP));
        acc = acc.add(w, keep);
      }
      float s = acc.reduceLanes(VectorOperators.ADD);
      for (; i < to; i++) {
        s += candidate(weights[i], pivot, minP);
      }
      chunkSums[c] = s;
      total += s;
    }
    return total;
  }

  private static float candidate(float w, float pivot, float minP) {
    return w > pivot && w >= minP ? w : 0f;
  }

  /** The first candidate (in id order) where the running sum of candidate weights passes target. */
  private int walk(double target, float pivot, float minP) {
    double acc = 0;
    int last = -1;
    for (int c = 0; c < chunkSums.length; c++) {
      if (chunkSums[c] <= 0) {
        continue;
      }
      if (acc + chunkSums[c] <= target) {
        acc += chunkSums[c];
        last = c;
        continue;
      }
      int to = Math.min(vocab, (c + 1) * CHUNK);
      for (int i = c * CHUNK; i < to; i++) {
        float w = candidate(weights[i], pivot, minP);
        if (w > 0) {
          acc += w;
          if (target < acc) {
            return i;
          }
        }
      }
      last = c; // rounding: the chunk's own sum said the target was inside; go on
    }
    // Rounding at the very end: the last candidate.
    for (int c = last; c >= 0; c--) {
      for (int i = Math.min(vocab, (c + 1) * CHUNK) - 1; i >= c * CHUNK; i--) {
        if (candidate(weights[i], pivot, minP) > 0) {
          return i;
        }
      }
    }
    throw new IllegalStateException("no candidate token with positive weight");
  }

  /** Sum of the top-k weights strictly above {@code w}. */
  private double massAbove(float w) {
    double total = 0;
    for (int c = 0; c < chunkSums.length; c++) {
      int from = c * CHUNK;
      int to = Math.min(vocab, from + CHUNK);
      int i = from;
      FloatVector acc = FloatVector.zero(F);
      for (; i <= to - F.length(); i += F.length()) {
        FloatVector v = FloatVector.fromArray(F, weights, i);
        acc = acc.add(v, v.compare(VectorOperators.GT, w));
      }
      float s = acc.reduceLanes(VectorOperators.ADD);
      for (; i < to; i++) {
        s += weights[i] > w ? weights[i] : 0f;
      }
      total += s;
    }
    return total;
  }

  private float max(float[] l, int base) {
    int i = 0;
    FloatVector m = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
    for (; i <= vocab - F.length(); i += F.length()) {
      m = m.max(FloatVector.fromArray(F, l, base + i));
    }
    float max = m.reduceLanes(VectorOperators.MAX);
    for (; i < vocab; i++) {
      max = Math.max(max, l[base + i]);
    }
    return max;
  }

  private int firstIndexOf(float[] l, int base, float v) {
    for (int i = 0; i < vocab; i++) {
      if (l[base + i] == v) {
        return i;
      }
    }
    return -1; // NaN max
  }

  /** The k-th largest of the row (counting repeats), 1 <= k < vocab. */
  private float kthLargest(float[] l, int base, int k) {
    if (k <= HEAP_TOP_K) {
      // A min-heap of the k largest so far; most values fail the first comparison.
      float[] heap = select;
      for (int i = 0; i < k; i++) {
        heap[i] = l[base + i];
        siftUp(heap, i);
      }
      for (int i = k; i < vocab; i++) {
        float v = l[base + i];
        if (v > heap[0]) {
          heap[0] = v;
          siftDown(heap, k);
        }
      }
      return heap[0];
    }
    System.arraycopy(l, base, select, 0, vocab);
    return Selection.kthLargest(select, vocab, k);
  }

  private static void siftUp(float[] h, int i) {
    float v = h[i];
    while (i > 0) {
      int p = (i - 1) >>> 1;
      if (h[p] <= v) {
        break;
      }
      h[i] = h[p];
      i = p;
    }
    h[i] = v;
  }

  private static void siftDown(float[] h, int n) {
    float v = h[0];
    int i = 0;
    while (true) {
      int c = 2 * i + 1;
      if (c >= n) {
        break;
      }
      if (c + 1 < n && h[c + 1] < h[c]) {
        c++;
      }
      if (h[c] >= v) {
        break;
      }
      h[i] = h[c];
      i = c;
    }
    h[i] = v;
  }

  private void logprobs(
      float[] l, int base, float max, int token, int r, int top, SampledTokens out) {
    double sum = 0;
    int i = 0;
    for (int c = 0; c < chunkSums.length; c++) {
      int to = Math.min(vocab, (c + 1) * CHUNK);
      FloatVector acc = FloatVector.zero(F);
      for (; i <= to - F.length(); i += F.length()) {
        acc = acc.add(FloatVector.fromArray(F, l, base + i).sub(max).lanewise(VectorOperators.EXP));
      }
      float s = acc.reduceLanes(VectorOperators.ADD);
      for (; i < to; i++) {
        s += (float) Math.exp(l[base + i] - max);
      }
      sum += s;
    }
    double lse = max + Math.log(sum);
    out.logprobs()[r] = (float) (l[base + token] - lse);
    int k = Math.min(top, vocab);
    int at = r * out.topStride();
    int[] ids = out.topIds();
    float[] lps = out.topLogprobs();
    // Insertion into a sorted list of k: equal values keep the earlier (lower) id first.
    int filled = 0;
    for (int t = 0; t < vocab && k > 0; t++) {
      float v = l[base + t];
      if (filled < k || v > l[base + ids[at + filled - 1]]) {
        int pos = Math.min(filled, k - 1);
        while (pos > 0 && l[base + ids[at + pos - 1]] < v) {
          ids[at + pos] = ids[at + pos - 1];
          pos--;
        }
        ids[at + pos] = t;
        filled = Math.min(filled + 1, k);
      }
    }
    for (int j = 0; j < k; j++) {
      lps[at + j] = (float) (l[base + ids[at + j]] - lse);
    }
  }
}
