package dev.ringmaster.engine.constraint;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The states of a {@link ByteDfa} grouped by the token mask they give, so a mask is computed once
 * per class instead of once per state. Two states share a class when both accept or neither does,
 * and every byte string of at most {@code maxTokenBytes} bytes (the vocabulary's longest token)
 * leads from both to a live state or from neither: then no token tells them apart. A counted string
 * ({@code minLength 1024}) has a distinct state per count, but the counts farther than a token from
 * either bound fall into one class.
 *
 * <p>The classes come from Moore's partition refinement cut at {@code maxTokenBytes} rounds (or at
 * its fixpoint, when that comes first): it starts from {accepting, not accepting} and splits each
 * class by the classes of its states' successors, byte by byte. A round re-examines only the states
 * with a successor that moved in the round before, and bytes no state tells apart are looked at
 * once. The work is counted in successor look-ups; where it would pass {@code workBudget} the
 * refinement gives up and every state is its own class (masks per state, the same masks, only less
 * sharing). Immutable.
 */
final class MaskClasses {
  /**
   * Successor look-ups allowed: a few tenths of a second on one core, enough for the largest
   * automaton ({@value ByteDfa#MAX_STATES} states) with a few dozen byte classes and some rounds.
   */
  static final long WORK_BUDGET = 1L << 26;

  private final int[] classOf;
  private final int count;
  private final boolean refined;

  private MaskClasses(int[] classOf, int count, boolean refined) {
    this.classOf = classOf;
    this.count = count;
    this.refined = refined;
  }

  /**
   * The mask classes of {@code dfa} for tokens of at most {@code maxTokenBytes} bytes; one class
   * per state when refining would take more than {@code workBudget} successor look-ups.
   */
  static MaskClasses of(ByteDfa dfa, int maxTokenBytes, long workBudget) {
    int n = dfa.states();
    int[] reps = byteRepresentatives(dfa);
    int k = reps.length;
    if ((long) n * k > workBudget) {
      return perState(n);
    }
    int[] succ = new int[n * k];
    for (int s = 0; s < n; s++) {
      for (int j = 0; j < k; j++) {
        succ[s * k + j] = dfa.next(s, reps[j]);
      }
    }
    int[][] preds = predecessors(succ, n, k);
    int[] cls = new int[n];
    int[] size = new int[n + 2];
    for (int s = 0; s < n; s++) {
      cls[s] = dfa.accepting(s) ? 1 : 0;
      size[cls[s]]++;
    }
    int ids = 2;
    long work = 0;
    int[] dirty = allStates(n);
    int[] stamp = new int[n];
    for (int round = 1; round <= maxTokenBytes && dirty.length > 0; round++) {
      work += (long) dirty.length * k;
      if (work > workBudget) {
        return perState(n);
      }
      // Signatures use the classes as the previous round left them: compute all, then move.
      Map<Signature, List<Integer>> groups = new HashMap<>();
      for (int s : dirty) {
        int[] sig = new int[k + 1];
        sig[0] = cls[s];
        for (int j = 0; j < k; j++) {
          int t = succ[s * k + j];
          sig[j + 1] = t < 0 ? -1 : cls[t];
        }
        groups.computeIfAbsent(new Signature(sig), g -> new ArrayList<>()).add(s);
      }
      Map<Integer, List<List<Integer>>> byClass = new HashMap<>();
      for (Map.Entry<Signature, List<Integer>> e : groups.entrySet()) {
        byClass.computeIfAbsent(e.getKey().sig()[0], c -> new ArrayList<>()).add(e.getValue());
      }
      List<Integer> moved = new ArrayList<>();
      for (Map.Entry<Integer, List<List<Integer>>> e : byClass.entrySet()) {
        int c = e.getKey();
        List<List<Integer>> parts = e.getValue();
        int dirtyIn = 0;
        int largest = 0;
        for (int i = 0; i < parts.size(); i++) {
          dirtyIn += parts.get(i).size();
          if (parts.get(i).size() > parts.get(largest).size()) {
            largest = i;
          }
        }
        // A dirty state has a successor with a fresh class id, so its signature differs from the
        // clean states' of its class: they keep the id. With no clean state, the largest part
        // keeps it. Every other part gets a fresh id, which is what marks its predecessors dirty.
        int keeps = dirtyIn < size[c] ? -1 : largest;
        for (int i = 0; i < parts.size(); i++) {
          if (i == keeps) {
            continue;
          }
          int id = ids++;
          for (int s : parts.get(i)) {
            cls[s] = id;
            moved.add(s);
          }
          size[c] -= parts.get(i).size();
          size[id] = parts.get(i).size();
        }
      }
      dirty = predecessorsOf(moved, preds, stamp, round);
    }
    int[] dense = compact(cls, ids);
    int count = 0;
    for (int c : dense) {
      count = Math.max(count, c + 1);
    }
    return new MaskClasses(dense, count, true);
  }

  /** Every state its own class. */
  static MaskClasses perState(int states) {
    return new MaskClasses(allStates(states), states, false);
  }

  /** The class of {@code state}, in {@code [0, count())}. */
  int classOf(int state) {
    return classOf[state];
  }

  /** Number of classes. */
  int count() {
    return count;
  }

  /** Whether the states were grouped (false: the work bound was hit, one class per state). */
  boolean refined() {
    return refined;
  }

  /** A state's signature in one round: its class, then its successors' per byte class. */
  private record Signature(int[] sig) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Signature other && Arrays.equals(sig, other.sig);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(sig);
    }
  }

  /**
   * One byte of each class of bytes that every state sends to the same successor. Bytes are grouped
   * by a hash of their column, read row by row (a column walk would miss the cache at every state),
   * then the grouping is checked exactly; a hash collision leaves every byte apart.
   */
  private static int[] byteRepresentatives(ByteDfa dfa) {
    int n = dfa.states();
    long[] hash = new long[256];
    Arrays.fill(hash, 0x9E3779B97F4A7C15L);
    for (int s = 0; s < n; s++) {
      for (int b = 0; b < 256; b++) {
        long h = (hash[b] ^ (dfa.next(s, b) + 1)) * 0xBF58476D1CE4E5B9L;
        hash[b] = h ^ (h >>> 31);
      }
    }
    int[] repOf = new int[256];
    int[] reps = new int[256];
    int k = 0;
    for (int b = 0; b < 256; b++) {
      repOf[b] = b;
      for (int i = 0; i < k; i++) {
        if (hash[reps[i]] == hash[b]) {
          repOf[b] = reps[i];
          break;
        }
      }
      if (repOf[b] == b) {
        reps[k++] = b;
      }
    }
    for (int s = 0; s < n; s++) {
      for (int b = 0; b < 256; b++) {
        if (dfa.next(s, b) != dfa.next(s, repOf[b])) {
          return allStates(256);
        }
      }
    }
    return Arrays.copyOf(reps, k);
  }

  /** Per state, the distinct states with a transition into it. */
  private static int[][] predecessors(int[] succ, int n, int k) {
    int[] counts = new int[n];
    int[] last = new int[n];
    Arrays.fill(last, -1);
    for (int s = 0; s < n; s++) {
      for (int j = 0; j < k; j++) {
        int t = succ[s * k + j];
        if (t >= 0 && last[t] != s) {
          last[t] = s;
          counts[t]++;
        }
      }
    }
    int[][] preds = new int[n][];
    for (int t = 0; t < n; t++) {
      preds[t] = new int[counts[t]];
      counts[t] = 0;
    }
    Arrays.fill(last, -1);
    for (int s = 0; s < n; s++) {
      for (int j = 0; j < k; j++) {
        int t = succ[s * k + j];
        if (t >= 0 && last[t] != s) {
          last[t] = s;
          preds[t][counts[t]++] = s;
        }
      }
    }
    return preds;
  }

  /** The distinct predecessors of {@code moved}; {@code stamp} marks those taken this round. */
  private static int[] predecessorsOf(List<Integer> moved, int[][] preds, int[] stamp, int round) {
    int[] out = new int[16];
    int m = 0;
    for (int t : moved) {
      for (int p : preds[t]) {
        if (stamp[p] != round) {
          stamp[p] = round;
          if (m == out.length) {
            out = Arrays.copyOf(out, m * 2);
          }
          out[m++] = p;
        }
      }
    }
    return Arrays.copyOf(out, m);
  }

  private static int[] allStates(int n) {
    int[] all = new int[n];
    for (int s = 0; s < n; s++) {
      all[s] = s;
    }
    return all;
  }

  /** The class ids renumbered densely from 0 in order of first use. */
  private static int[] compact(int[] cls, int ids) {
    int[] renumber = new int[ids];
    Arrays.fill(renumber, -1);
    int next = 0;
    int[] out = new int[cls.length];
    for (int s = 0; s < cls.length; s++) {
      if (renumber[cls[s]] < 0) {
        renumber[cls[s]] = next++;
      }
      out[s] = renumber[cls[s]];
    }
    return out;
  }
}
