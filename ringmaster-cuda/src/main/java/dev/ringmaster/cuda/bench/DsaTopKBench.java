package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.cuda.kernels.DsaLaunchShapes;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Arrays;
import java.util.Locale;
import java.util.TreeSet;

/**
 * KernelBench rows of the DSA candidate top-k ({@link DsaLaunchShapes#topKCandidates}) in the GLM-5
 * shape (top 2,048 of rows scored by the indexer's score kernel from random bf16 keys and random
 * queries and weights, 32 heads of 128): per batch 1 and 32 and context 4k / 32k / 128k, both
 * first-pass bins ({@link DsaKernels#useTopKHalfBins}: the f32 order key's top 12 bits, or the
 * half-rounded score's) and both ordered writes ({@link DsaKernels#useTopKWideWrite}), at 4 and 16
 * chunks a row and at the count a decode graph takes ({@link DsaLaunchShapes#topKChunks(long, int,
 * int)}), each row with its candidate counts ({@link #candidates}); and the scores followed by the
 * top-k at the graph's count. GB/s counts one read of the scores ({@code scores + top-k}: of the
 * keys).
 */
final class DsaTopKBench {
  private static final int INDEX_HEADS = 32;
  private static final int INDEX_DIM = 128;
  private static final int TOP_K = 2048;
  private static final int BLOCK = 64;
  private static final int SMS = 132;

  /** GLM-5's max_position_embeddings: the context a decode graph's grids cover. */
  private static final int GRAPH_CONTEXT = 202752;

  private DsaTopKBench() {}

  /** Adds the rows to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    for (int len : new int[] {4096, 32768, 131072}) {
      for (int batch : new int[] {1, 32}) {
        shape(b, k, s, batch, len);
      }
    }
  }

  private static void shape(KernelBench b, RingmasterKernels k, CudaStream s, int rows, int len) {
    DsaKernels dsa = k.dsa();
    boolean halfBefore = dsa.topKHalfBins();
    boolean wideBefore = dsa.topKWideWrite();
    int blocksPerSeq = (len + BLOCK - 1) / BLOCK;
    int[] table = new int[rows * blocksPerSeq];
    Arrays.setAll(table, i -> i);
    int[] seqs = new int[rows];
    Arrays.setAll(seqs, i -> i);
    int[] pos = new int[rows];
    Arrays.fill(pos, len - 1);
    int ld = GRAPH_CONTEXT;
    float scale = (float) (1 / Math.sqrt(INDEX_DIM));
    float headScale = (float) (1 / Math.sqrt(INDEX_HEADS));
    int scoreBlocks = DsaLaunchShapes.scoreBlocks(rows, GRAPH_CONTEXT, SMS);
    int graphChunks = DsaLaunchShapes.topKChunks(GRAPH_CONTEXT, rows, SMS);
    try (DeviceBuffer keys = b.randomBf16((long) rows * blocksPerSeq * BLOCK * INDEX_DIM, 1f);
        DeviceBuffer tablePtr = ints(s, table);
        DeviceBuffer seqPtr = ints(s, seqs);
        DeviceBuffer posPtr = ints(s, pos);
        DeviceBuffer q = b.randomF32(rows * INDEX_HEADS * INDEX_DIM);
        DeviceBuffer w = b.randomF32(rows * INDEX_HEADS);
        DeviceBuffer scores = DeviceBuffer.allocate(4L * rows * ld);
        DeviceBuffer sel = DeviceBuffer.allocate(4L * rows * TOP_K);
        DeviceBuffer state =
            DeviceBuffer.allocate(
                DsaLaunchShapes.topKStateBytes(rows, DsaLaunchShapes.TOPK_MAX_CHUNKS))) {
      Runnable score =
          () ->
              dsa.scores(
                  s,
                  scores.ptr(),
                  ld,
                  q.ptr(),
                  w.ptr(),
                  keys.ptr(),
                  tablePtr.ptr(),
                  blocksPerSeq,
                  seqPtr.ptr(),
                  posPtr.ptr(),
                  0,
                  rows,
                  INDEX_HEADS,
                  INDEX_DIM,
                  BLOCK,
                  scale,
                  headScale,
                  scoreBlocks);
      score.run();
      double scoreBytes = 4.0 * rows * len;
      TreeSet<Integer> counts = new TreeSet<>(Arrays.asList(4, 16, graphChunks));
      for (int chunks : counts) {
        for (int form = 0; form < 4; form++) {
          boolean half = (form & 1) != 0;
          boolean wide = form >= 2;
          dsa.useTopKHalfBins(half);
          dsa.useTopKWideWrite(wide);
          Runnable topK = topK(dsa, s, sel, scores, ld, posPtr, rows, state, chunks);
          double ms = b.time(i -> topK.run());
          topK.run();
          String what =
              String.format(
                  Locale.ROOT,
                  "dsa top-k alone, candidate, %s bins%s, %d chunks",
                  half ? "half" : "f32",
                  wide ? ", wide write" : "",
                  chunks);
          b.row(
              label(what, rows, len) + ", " + candidates(s, state, rows, chunks),
              ms,
              scoreBytes / (ms * 1e6));
        }
      }
      double keyBytes = 2.0 * rows * len * INDEX_DIM;
      for (int form = 0; form < 4; form++) {
        boolean half = (form & 1) != 0;
        boolean wide = form >= 2;
        dsa.useTopKHalfBins(half);
        dsa.useTopKWideWrite(wide);
        Runnable topK = topK(dsa, s, sel, scores, ld, posPtr, rows, state, graphChunks);
        double ms =
            b.time(
                i -> {
                  score.run();
                  topK.run();
                });
        String what =
            String.format(
                Locale.ROOT,
                "dsa indexer scores + candidate top-k, %s bins%s, %d chunks",
                half ? "half" : "f32",
                wide ? ", wide write" : "",
                graphChunks);
        b.row(label(what, rows, len), ms, keyBytes / (ms * 1e6));
      }
    } finally {
      dsa.useTopKHalfBins(halfBefore);
      dsa.useTopKWideWrite(wideBefore);
    }
  }

  private static Runnable topK(
      DsaKernels dsa,
      CudaStream s,
      DeviceBuffer sel,
      DeviceBuffer scores,
      int ld,
      DeviceBuffer pos,
      int rows,
      DeviceBuffer state,
      int chunks) {
    return () ->
        dsa.topKCandidates(
            s, sel.ptr(), TOP_K, scores.ptr(), ld, pos.ptr(), 0, rows, state.ptr(), chunks);
  }

  /**
   * The candidate counts of the {@code rows} rows after a run of {@link
   * DsaLaunchShapes#topKCandidates} over {@code chunks} blocks a row, read back from its {@code
   * state}: "cand MIN/MEDIAN/MAX, N over CAP" (N rows whose threshold bin held more positions than
   * the list: those rows' last block read the whole row again).
   */
  static String candidates(CudaStream s, DeviceBuffer state, int rows, int chunks) {
    long last = DsaLaunchShapes.topKCandidateCountIndex(rows - 1, chunks);
    int[] words = state.downloadInts(s, (int) last + 1);
    int[] c = new int[rows];
    int over = 0;
    for (int r = 0; r < rows; r++) {
      c[r] = words[(int) DsaLaunchShapes.topKCandidateCountIndex(r, chunks)];
      over += c[r] > DsaLaunchShapes.topKCandidateCapacity() ? 1 : 0;
    }
    Arrays.sort(c);
    return String.format(
        Locale.ROOT,
        "cand %d/%d/%d, %d over %d",
        c[0],
        c[rows / 2],
        c[rows - 1],
        over,
        DsaLaunchShapes.topKCandidateCapacity());
  }

  private static String label(String what, int rows, int len) {
    return String.format(Locale.ROOT, "%s, batch %d, context %d", what, rows, len);
  }

  private static DeviceBuffer ints(CudaStream s, int[] v) {
    DeviceBuffer d = DeviceBuffer.allocate(4L * v.length);
    d.upload(s, v);
    return d;
  }
}
