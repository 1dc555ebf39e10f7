package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.cuda.kernels.DsaLaunchShapes;
import dev.ringmaster.cuda.kernels.MlaKernels;
import dev.ringmaster.cuda.kernels.MlaWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * KernelBench rows of DeepSeek Sparse Attention in the GLM-5 shape (64 MLA heads, latent 512 + rope
 * 64, qk_nope 192, v 256; indexer 32 heads of 128, top 2,048; blocks of 64): per layer and decode
 * step at batch 1 and 32 and contexts 4k / 32k / 128k, the indexer's scores and top-k (with the
 * grid a decode graph captures, sized for {@value #GRAPH_CONTEXT} positions), sparse MLA over 2,048
 * selected positions (absorb, split, combine, out-projection) on tensor and CUDA cores, and dense
 * MLA over the whole context for comparison; and the indexer over FP8 keys ({@code
 * --indexer-cache-dtype fp8_e4m3}: the query heads' quantization, scores over e4m3 codes and one
 * scale per key, and the top-k). The multi-block top-k shows in both forms ({@code
 * indexer-topk-candidates}: six radix passes, or three launches over its threshold bin's
 * candidates), also alone over fixed scores (the candidate rows with their rows' candidate counts,
 * {@link DsaTopKBench#candidates}); the indexer's key preparation (its {@code wk} and {@code
 * weights_proj} GEMVs, the key's norm, the ropes and the key's append) as separate and as fused
 * launches ({@code indexer-fused-ops}). The tensor-core scores also run on the tiled reference
 * kernels ({@link DsaKernels#useTiledScoreKernels}, their own grid) for an A/B in one process;
 * {@link #runScores} gives only those score rows. GB/s counts the cache bytes a step must read
 * (indexer keys of every position, 256 bytes each in bf16 and 132 in FP8; selected or all latent
 * rows).
 */
final class DsaBench {
  private static final int HEADS = 64;
  private static final int NOPE = 192;
  private static final int ROPE = 64;
  private static final int V = 256;
  private static final int LORA = 512;
  private static final int INDEX_HEADS = 32;
  private static final int INDEX_DIM = 128;
  private static final int TOP_K = 2048;
  private static final int BLOCK = 64;
  private static final int SMS = 132;
  private static final int MAX_SPLITS = 256;

  /** GLM-5's max_position_embeddings: the context a decode graph's indexer grid covers. */
  private static final int GRAPH_CONTEXT = 202752;

  private DsaBench() {}

  /** Adds the rows to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    for (int len : new int[] {4096, 32768, 131072}) {
      for (int batch : new int[] {1, 32}) {
        try (Inputs in = new Inputs(b, s, batch, len)) {
          sparse(b, k, s, in, true);
          if (len == 4096) {
            sparse(b, k, s, in, false);
          }
          dense(b, k, s, in);
          indexer(b, k, s, in, true);
          indexerFp8(b, k, s, in, true);
          scoresAb(b, k, s, in, false);
          if (len == 4096) {
            indexer(b, k, s, in, false);
            indexerFp8(b, k, s, in, false);
            DsaPrepBench.run(b, k, s, batch);
          }
        }
      }
    }
  }

  /**
   * Adds only the tensor-core score rows, the streaming kernels (bf16: query fragments in registers
   * and re-read from shared memory) and the tiled reference ones side by side (bf16 and FP8 keys),
   * at batch 1 and 32 and contexts 4k, 32k and 128k, or only at the {batch, context} pairs of
   * {@code only} where it has any.
   */
  static void runScores(KernelBench b, RingmasterKernels k, CudaStream s, int[][] only) {
    int[][] shapes =
        only.length > 0
            ? only
            : new int[][] {
              {1, 4096}, {1, 32768}, {1, 131072}, {32, 4096}, {32, 32768}, {32, 131072}
            };
    for (int[] shape : shapes) {
      try (Inputs in = new Inputs(b, s, shape[0], shape[1])) {
        scoresAb(b, k, s, in, true);
      }
    }
  }

  /**
   * The tensor-core scores alone on the tiled reference kernels (the grid {@link
   * DsaLaunchShapes#tiledScoreBlocks} gives them) and, with {@code streaming}, on the streaming
   * ones ({@link DsaLaunchShapes#scoreBlocks}), over bf16 and FP8 keys, the bf16 streaming scores
   * both with the query fragments in registers and without ({@link
   * DsaKernels#useRegisterScoreKernel}); every grid sized for {@value #GRAPH_CONTEXT} positions as
   * a decode graph's.
   */
  private static void scoresAb(
      KernelBench b, RingmasterKernels k, CudaStream s, Inputs in, boolean streaming) {
    DsaKernels dsa = k.dsa();
    int rows = in.batch;
    int ld = GRAPH_CONTEXT;
    long slots = (long) rows * in.blocksPerSeq * BLOCK;
    float scale = (float) (1 / Math.sqrt(INDEX_DIM));
    float headScale = (float) (1 / Math.sqrt(INDEX_HEADS));
    try (DeviceBuffer codes = b.randomFp8Codes(slots * INDEX_DIM);
        DeviceBuffer kScales = DeviceBuffer.allocate(4L * slots);
        DeviceBuffer qCodes = DeviceBuffer.allocate(4L * rows * INDEX_HEADS * INDEX_DIM);
        DeviceBuffer qScales = DeviceBuffer.allocate(4L * rows * INDEX_HEADS);
        DeviceBuffer scores = DeviceBuffer.allocate(4L * rows * ld)) {
      CudaDriver.get().memsetD32Async(kScales.ptr(), Float.floatToIntBits(1f), slots, s.handle());
      dsa.quantizeFp8(
          s, 0, qScales.ptr(), qCodes.ptr(), in.indexQ.ptr(), 0, rows * INDEX_HEADS, INDEX_DIM);
      boolean registers = dsa.registerScoreKernel();
      boolean quadDefault = dsa.quadScoreKernel();
      boolean bulkDefault = dsa.bulkScoreKernel();
      // -2: -1 with the key tiles by bulk copies (bf16 only); -1: streaming, query fragments in
      // registers, heads summed in registers (bf16 only); 0: streaming, query fragments in
      // registers (bf16 only); 1: streaming; 2: tiled reference.
      for (int variant = streaming ? -2 : 2; variant < 3; variant++) {
        boolean tiled = variant == 2;
        boolean bulk = variant == -2;
        boolean quad = variant <= -1;
        boolean regs = variant <= 0;
        int blocks =
            tiled
                ? DsaLaunchShapes.tiledScoreBlocks(rows, GRAPH_CONTEXT, SMS)
                : DsaLaunchShapes.scoreBlocks(rows, GRAPH_CONTEXT, SMS);
        dsa.useTiledScoreKernels(tiled);
        dsa.useRegisterScoreKernel(regs);
        dsa.useQuadScoreKernel(quad);
        dsa.useBulkScoreKernel(bulk);
        try {
          double msBf16 =
              b.time(
                  i ->
                      dsa.scores(
                          s,
                          scores.ptr(),
                          ld,
                          in.indexQ.ptr(),
                          in.indexW.ptr(),
                          in.keys.ptr(),
                          in.table.ptr(),
                          in.blocksPerSeq,
                          in.seqs.ptr(),
                          in.positions.ptr(),
                          0,
                          rows,
                          INDEX_HEADS,
                          INDEX_DIM,
                          BLOCK,
                          scale,
                          headScale,
                          blocks));
          double msFp8 =
              regs
                  ? Double.NaN
                  : b.time(
                      i ->
                          dsa.scoresFp8(
                              s,
                              scores.ptr(),
                              ld,
                              qCodes.ptr(),
                              qScales.ptr(),
                              in.indexW.ptr(),
                              codes.ptr(),
                              kScales.ptr(),
                              in.table.ptr(),
                              in.blocksPerSeq,
                              in.seqs.ptr(),
                              in.positions.ptr(),
                              0,
                              rows,
                              INDEX_HEADS,
                              INDEX_DIM,
                              BLOCK,
                              scale,
                              headScale,
                              blocks));
          String kernel =
              String.format(
                  Locale.ROOT,
                  "%s kernel, %d blocks per row",
                  tiled
                      ? "tiled reference"
                      : bulk
                          ? "streaming (bulk key copies, query and head sums in registers)"
                          : quad
                              ? "streaming (query and head sums in registers)"
                              : regs ? "streaming (query in registers)" : "streaming",
                  blocks);
          double bf16Bytes = 2.0 * rows * in.len * INDEX_DIM;
          double fp8Bytes = (double) rows * in.len * (INDEX_DIM + 4);
          b.row(
              label("dsa indexer scores alone, tensor cores, " + kernel, in),
              msBf16,
              bf16Bytes / (msBf16 * 1e6));
          if (!regs) {
            b.row(
                label("dsa indexer scores alone, fp8 keys, tensor cores, " + kernel, in),
                msFp8,
                fp8Bytes / (msFp8 * 1e6));
          }
        } finally {
          dsa.useTiledScoreKernels(false);
          dsa.useRegisterScoreKernel(registers);
          dsa.useQuadScoreKernel(quadDefault);
          dsa.useBulkScoreKernel(bulkDefault);
        }
      }
    }
  }

  private static void indexer(
      KernelBench b, RingmasterKernels k, CudaStream s, Inputs in, boolean tensorCores) {
    DsaKernels dsa = k.dsa();
    int rows = in.batch;
    int ld = GRAPH_CONTEXT;
    int blocks = DsaLaunchShapes.scoreBlocks(rows, GRAPH_CONTEXT, SMS);
    int chunks = DsaLaunchShapes.topKChunks(GRAPH_CONTEXT);
    dsa.useIndexerTensorCores(tensorCores);
    try (DeviceBuffer scores = DeviceBuffer.allocate(4L * rows * ld);
        DeviceBuffer state = DeviceBuffer.allocate(DsaLaunchShapes.topKStateBytes(rows, chunks))) {
      float scale = (float) (1 / Math.sqrt(INDEX_DIM));
      float headScale = (float) (1 / Math.sqrt(INDEX_HEADS));
      Runnable score =
          () ->
              dsa.scores(
                  s,
                  scores.ptr(),
                  ld,
                  in.indexQ.ptr(),
                  in.indexW.ptr(),
                  in.keys.ptr(),
                  in.table.ptr(),
                  in.blocksPerSeq,
                  in.seqs.ptr(),
                  in.positions.ptr(),
                  0,
                  rows,
                  INDEX_HEADS,
                  INDEX_DIM,
                  BLOCK,
                  scale,
                  headScale,
                  blocks);
      Runnable topK = topK(dsa, s, in, scores, ld, state, chunks, false);
      Runnable topKCand = topK(dsa, s, in, scores, ld, state, chunks, true);
      double keyBytes = 2.0 * rows * in.len * INDEX_DIM;
      scoreRows(
          b, in, tensorCores ? "tensor cores" : "CUDA cores", keyBytes, score, topK, topKCand);
      if (tensorCores) {
        // The top-k alone over the scores just computed (the bytes: one read of the scores).
        double scoreBytes = 4.0 * rows * in.len;
        double msMulti = b.time(i -> topK.run());
        double msCandAlone = b.time(i -> topKCand.run());
        topKCand.run();
        String counts = DsaTopKBench.candidates(s, state, rows, chunks);
        b.row(
            label("dsa top-k alone, six-pass multi-block", in),
            msMulti,
            scoreBytes / (msMulti * 1e6));
        b.row(
            label("dsa top-k alone, candidate (3 launches)", in) + ", " + counts,
            msCandAlone,
            scoreBytes / (msCandAlone * 1e6));
        // Fewer blocks a row where many rows fill the GPU (the same selections at any count).
        for (int fewer : new int[] {32, 16, 8, 4}) {
          if (fewer < chunks && rows > 1) {
            Runnable cand = topK(dsa, s, in, scores, ld, state, fewer, true);
            double ms = b.time(i -> cand.run());
            cand.run();
            b.row(
                label("dsa top-k alone, candidate, " + fewer + " chunks a row", in)
                    + ", "
                    + DsaTopKBench.candidates(s, state, rows, fewer),
                ms,
                scoreBytes / (ms * 1e6));
          }
        }
      }
    } finally {
      dsa.useIndexerTensorCores(true);
    }
  }

  /** {@link #indexer} over FP8 keys (random codes, unit scales), the query quantized each step. */
  private static void indexerFp8(
      KernelBench b, RingmasterKernels k, CudaStream s, Inputs in, boolean tensorCores) {
    DsaKernels dsa = k.dsa();
    int rows = in.batch;
    int ld = GRAPH_CONTEXT;
    int blocks = DsaLaunchShapes.scoreBlocks(rows, GRAPH_CONTEXT, SMS);
    int chunks = DsaLaunchShapes.topKChunks(GRAPH_CONTEXT);
    long slots = (long) rows * in.blocksPerSeq * BLOCK;
    dsa.useIndexerTensorCores(tensorCores);
    try (DeviceBuffer codes = b.randomFp8Codes(slots * INDEX_DIM);
        DeviceBuffer kScales = DeviceBuffer.allocate(4L * slots);
        DeviceBuffer qCodes = DeviceBuffer.allocate(4L * rows * INDEX_HEADS * INDEX_DIM);
        DeviceBuffer qScales = DeviceBuffer.allocate(4L * rows * INDEX_HEADS);
        DeviceBuffer scores = DeviceBuffer.allocate(4L * rows * ld);
        DeviceBuffer state = DeviceBuffer.allocate(DsaLaunchShapes.topKStateBytes(rows, chunks))) {
      CudaDriver.get().memsetD32Async(kScales.ptr(), Float.floatToIntBits(1f), slots, s.handle());
      float scale = (float) (1 / Math.sqrt(INDEX_DIM));
      float headScale = (float) (1 / Math.sqrt(INDEX_HEADS));
      Runnable score =
          () -> {
            dsa.quantizeFp8(
                s,
                0,
                qScales.ptr(),
                qCodes.ptr(),
                in.indexQ.ptr(),
                0,
                rows * INDEX_HEADS,
                INDEX_DIM);
            dsa.scoresFp8(
                s,
                scores.ptr(),
                ld,
                qCodes.ptr(),
                qScales.ptr(),
                in.indexW.ptr(),
                codes.ptr(),
                kScales.ptr(),
                in.table.ptr(),
                in.blocksPerSeq,
                in.seqs.ptr(),
                in.positions.ptr(),
                0,
                rows,
                INDEX_HEADS,
                INDEX_DIM,
                BLOCK,
                scale,
                headScale,
                blocks);
          };
      double keyBytes = (double) rows * in.len * (INDEX_DIM + 4);
      scoreRows(
          b,
          in,
          "fp8 keys, " + (tensorCores ? "tensor cores" : "CUDA cores"),
          keyBytes,
          score,
          topK(dsa, s, in, scores, ld, state, chunks, false),
          topK(dsa, s, in, scores, ld, state, chunks, true));
    } finally {
      dsa.useIndexerTensorCores(true);
    }
  }

  /**
   * Times the scores alone, then followed by each top-k form, and writes the three rows ({@code
   * what}: the keys' and kernels' kind, e.g. "tensor cores").
   */
  private static void scoreRows(
      KernelBench b,
      Inputs in,
      String what,
      double keyBytes,
      Runnable score,
      Runnable multi,
      Runnable candidates) {
    double msScores = b.time(i -> score.run());
    double msMulti =
        b.time(
            i -> {
              score.run();
              multi.run();
            });
    double msCand =
        b.time(
            i -> {
              score.run();
              candidates.run();
            });
    b.row(label("dsa indexer scores, " + what, in), msScores, keyBytes / (msScores * 1e6));
    b.row(
        label("dsa indexer scores + multi-block top-k, " + what, in),
        msMulti,
        keyBytes / (msMulti * 1e6));
    b.row(
        label("dsa indexer scores + candidate top-k, " + what, in),
        msCand,
        keyBytes / (msCand * 1e6));
  }

  /** The multi-block top-k of the bench's score rows: six passes, or the candidate form. */
  private static Runnable topK(
      DsaKernels dsa,
      CudaStream s,
      Inputs in,
      DeviceBuffer scores,
      int ld,
      DeviceBuffer state,
      int chunks,
      boolean candidates) {
    int rows = in.batch;
    return candidates
        ? () ->
            dsa.topKCandidates(
                s,
                in.sel.ptr(),
                TOP_K,
                scores.ptr(),
                ld,
                in.positions.ptr(),
                0,
                rows,
                state.ptr(),
                chunks)
        : () ->
            dsa.topKMulti(
                s,
                in.sel.ptr(),
                TOP_K,
                scores.ptr(),
                ld,
                in.positions.ptr(),
                0,
                rows,
                state.ptr(),
                chunks);
  }

  private static void sparse(
      KernelBench b, RingmasterKernels k, CudaStream s, Inputs in, boolean tensorCores) {
    boolean before = k.mla().mlaUsesTensorCores(LORA, ROPE);
    k.mla().useMlaTensorCores(tensorCores);
    int splits = MlaKernels.mlaSplits(in.batch, HEADS, TOP_K, SMS, MAX_SPLITS);
    try (MlaWorkspace ws = new MlaWorkspace(in.batch, splits, HEADS, LORA, ROPE)) {
      double ms =
          b.time(
              i ->
                  k.dsa()
                      .sparseMlaAttention(
                          s,
                          ws,
                          in.out.ptr(),
                          in.q.ptr(),
                          in.kvB.ptr(),
                          in.cache.ptr(),
                          in.table.ptr(),
                          in.blocksPerSeq,
                          in.seqs.ptr(),
                          in.positions.ptr(),
                          in.sel.ptr(),
                          TOP_K,
                          in.batch,
                          HEADS,
                          NOPE,
                          ROPE,
                          V,
                          LORA,
                          BLOCK,
                          splits,
                          0.07f));
      double bytes = 2.0 * in.batch * TOP_K * (LORA + ROPE);
      String what = tensorCores ? "tensor cores" : "CUDA cores";
      b.row(
          label(
              String.format(
                  Locale.ROOT, "dsa sparse mla, %s, %d selected, %d splits", what, TOP_K, splits),
              in),
          ms,
          bytes / (ms * 1e6));
    } finally {
      k.mla().useMlaTensorCores(before);
    }
  }

  private static void dense(KernelBench b, RingmasterKernels k, CudaStream s, Inputs in) {
    int splits = MlaKernels.mlaSplits(in.batch, HEADS, in.len, SMS, MAX_SPLITS);
    try (MlaWorkspace ws = new MlaWorkspace(in.batch, splits, HEADS, LORA, ROPE)) {
      double ms =
          b.time(
              i ->
                  k.mla()
                      .mlaAttention(
                          s,
                          ws,
                          in.out.ptr(),
                          in.q.ptr(),
                          in.kvB.ptr(),
                          in.cache.ptr(),
                          in.table.ptr(),
                          in.blocksPerSeq,
                          in.seqs.ptr(),
                          in.positions.ptr(),
                          in.batch,
                          HEADS,
                          NOPE,
                          ROPE,
                          V,
                          LORA,
                          BLOCK,
                          splits,
                          0.07f));
      double bytes = 2.0 * in.batch * in.len * (LORA + ROPE);
      b.row(
          label(String.format(Locale.ROOT, "dsa dense mla (comparison), %d splits", splits), in),
          ms,
          bytes / (ms * 1e6));
    }
  }

  private static String label(String what, Inputs in) {
    return String.format(Locale.ROOT, "%s, batch %d, context %d", what, in.batch, in.len);
  }

  /**
   * {@code batch} sequences of {@code len} cached positions (latent and indexer-key caches paged in
   * order), one query each at the last position, and a selection of {@link #TOP_K} random sorted
   * positions per query.
   */
  private static final class Inputs implements AutoCloseable {
    final int batch;
    final int len;
    final int blocksPerSeq;
    final DeviceBuffer cache;
    final DeviceBuffer keys;
    final DeviceBuffer table;
    final DeviceBuffer seqs;
    final DeviceBuffer positions;
    final DeviceBuffer q;
    final DeviceBuffer kvB;
    final DeviceBuffer out;
    final DeviceBuffer indexQ;
    final DeviceBuffer indexW;
    final DeviceBuffer sel;

    Inputs(KernelBench b, CudaStream s, int batch, int len) {
      this.batch = batch;
      this.len = len;
      blocksPerSeq = (len + BLOCK - 1) / BLOCK;
      long rows = (long) batch * blocksPerSeq * BLOCK;
      cache = b.randomBf16(rows * (LORA + ROPE), 1f);
      keys = b.randomBf16(rows * INDEX_DIM, 1f);
      int[] ids = new int[batch * blocksPerSeq];
      Arrays.setAll(ids, i -> i);
      int[] seq = new int[batch];
      int[] pos = new int[batch];
      int[] selected = new int[batch * TOP_K];
      SplittableRandom random = new SplittableRandom(7);
      for (int i = 0; i < batch; i++) {
        seq[i] = i;
        pos[i] = len - 1;
        int[] row = random.ints(0, len).distinct().limit(TOP_K).sorted().toArray();
        System.arraycopy(row, 0, selected, i * TOP_K, TOP_K);
      }
      table = ints(s, ids);
      seqs = ints(s, seq);
      positions = ints(s, pos);
      sel = ints(s, selected);
      q = b.randomF32(batch * HEADS * (NOPE + ROPE));
      kvB = b.randomBf16((long) HEADS * (NOPE + V) * LORA, 0.05f);
      out = DeviceBuffer.allocate(4L * batch * HEADS * V);
      indexQ = b.randomF32(batch * INDEX_HEADS * INDEX_DIM);
      indexW = b.randomF32(batch * INDEX_HEADS);
    }

    private static DeviceBuffer ints(CudaStream s, int[] v) {
      DeviceBuffer d = DeviceBuffer.allocate(4L * v.length);
      d.upload(s, v);
      return d;
    }

    @Override
    public void close() {
      for (DeviceBuffer d :
          new DeviceBuffer[] {
            cache, keys, table, seqs, positions, q, kvB, out, indexQ, indexW, sel
          }) {
        d.close();
      }
    }
  }
}
