package dev.ringmaster.cuda.bench;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.GpuThread;
import dev.ringmaster.cuda.blas.CublasHandle;
import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaEvent;
import dev.ringmaster.cuda.driver.CudaGraph;
import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.MlaKernels;
import dev.ringmaster.cuda.kernels.MlaWorkspace;
import dev.ringmaster.cuda.kernels.MoeKernels;
import dev.ringmaster.cuda.kernels.MoeWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * Times the decode kernels on GPU 0: the bf16 GEMV's bandwidth, the routed-expert kernels
 * (CUDA-core and tensor-core) on a DeepSeek-V2-Lite-shaped layer, and MLA decode attention. Every
 * timed region is a CUDA graph of {@value #REPS} launches replayed several times (median reported),
 * cycling over enough copies of the weights that the 60 MB L2 cannot hold them. Prints a table.
 */
public final class KernelBench {
  private static final int REPS = 50;
  private static final int TRIALS = 7;

  private final CudaStream stream;
  private final RingmasterKernels k;
  private final SplittableRandom random = new SplittableRandom(42);
  private final List<String> rows = new ArrayList<>();

  private KernelBench(CudaStream stream, RingmasterKernels k) {
    this.stream = stream;
    this.k = k;
  }

  /**
   * Runs the benchmark: every row without arguments; with {@code pdl}, only the rows that measure
   * programmatic dependent launch ({@link PdlChainBench}); {@code rows} only the rows that compare
   * the GEMV and expert down-projection variants (rows per warp, split-K: {@link
   * RowsPerWarpBench}); {@code mla BATCH CONTEXT} runs only the MLA decode of that shape (16
   * heads), e.g. under a profiler; {@code router} a one-token MoE router taken apart ({@link
   * RouterBench}); {@code mlafused} the fused MLA decode launch against the separate kernels;
   * {@code prefill} only the MLA prefill rows; {@code fp8} only the FP8 routed-expert rows ({@link
   * Fp8ExpertBench}); {@code gqa} only the grouped-query attention rows ({@link GqaBench}); {@code
   * sampling} only the device sampler's rows ({@link SamplerBench}); {@code dsa} only the DeepSeek
   * Sparse Attention rows in the GLM-5 shape ({@link DsaBench}); {@code dsascores} only its indexer
   * score rows, streaming and tiled reference kernels side by side; {@code dsatopk} only its
   * candidate top-k with both first-pass bins ({@link DsaTopKBench}).
   */
  public static void main(String[] args) {
    boolean pdlOnly = Arrays.asList(args).contains("pdl");
    boolean mlaOnly = args.length > 0 && args[0].equals("mla");
    if (mlaOnly && args.length != 3) {
      throw new IllegalArgumentException(
          "usage: KernelBench [pdl | rows | router | mla BATCH CONTEXT | mlafused | prefill | gqa |"
              + " sampling | fp8 | dsa | dsascores | dsatopk]");
    }
    try (GpuThread gpu = GpuThread.start(0)) {
      System.out.println("device: " + gpu.device());
      gpu.run(
          () -> {
            try (CudaStream s = CudaStream.create();
                RingmasterKernels k = new RingmasterKernels()) {
              KernelBench b = new KernelBench(s, k);
              if (mlaOnly) {
                b.mla(Integer.parseInt(args[1]), 16, Integer.parseInt(args[2]));
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("router")) {
                RouterBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("mlafused")) {
                // The fused launch against the separate kernels (CUDA and tensor cores).
                for (int len : new int[] {512, 4096, 32768}) {
                  for (int batch : new int[] {1, 2, 4, 8}) {
                    b.mla(batch, 16, len);
                    b.mlaFused(batch, 16, len);
                  }
                }
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("prefill")) {
                for (int len : new int[] {512, 4096}) {
                  for (PrefillPath path : PrefillPath.values()) {
                    b.mlaPrefill(16, len, path);
                  }
                }
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("sampling")) {
                SamplerBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("fp8")) {
                Fp8ExpertBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("dsascores")) {
                // dsascores [BATCH CONTEXT ...]: only those shapes (e.g. one, under ncu).
                int[][] only = new int[(args.length - 1) / 2][];
                for (int i = 0; i < only.length; i++) {
                  only[i] =
                      new int[] {
                        Integer.parseInt(args[1 + 2 * i]), Integer.parseInt(args[2 + 2 * i])
                      };
                }
                DsaBench.runScores(b, k, s, only);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("dsatopk")) {
                DsaTopKBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("dsa")) {
                DsaBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("gqa")) {
                GqaBench.run(b, k, s);
                b.print();
                return;
              }
              if (args.length > 0 && args[0].equals("rows")) {
                RowsPerWarpBench.run(b, k, s);
                b.print();
                return;
              }
              PdlChainBench.run(b, k, s);
              if (pdlOnly) {
                b.print();
                return;
              }
              b.gemv(4096, 4096);
              b.gemv(2048, 16384);
              b.gemv(16384, 2048);
              RowsPerWarpBench.run(b, k, s);
              for (int batch : new int[] {1, 8, 32, 128}) {
                b.moe(batch, 64, 6, 2048, 1408, 0);
              }
              // Tensor-core experts (moe_mma.cu) in passes of 32 tokens; 1 and 4 tokens only to
              // place the threshold, 2048 and 4096 as prefill chunks.
              for (int batch : new int[] {1, 4, 8, 32, 128, 384, 512, 2048, 4096}) {
                b.moe(batch, 64, 6, 2048, 1408, MoeKernels.MOE_MMA_PASS_TOKENS);
              }
              // In passes of 64 tokens (the *64 kernels): 384 (36 pairs per expert on average) and
              // 512 (48, MOE_MMA_WIDE_PAIRS_PER_EXPERT) place the switch between the two.
              for (int batch : new int[] {384, 512, 2048, 4096}) {
                b.moe(batch, 64, 6, 2048, 1408, MoeKernels.MOE_MMA_WIDE_PASS_TOKENS);
              }
              k.mla().useMlaTensorCores(false);
              b.mlaShapes();
              k.mla().useMlaTensorCores(true);
              // One cache tile in flight per block (two blocks per SM) against two (one per SM).
              for (int stages : new int[] {1, 2}) {
                k.mla().useMlaStages(stages);
                b.mlaShapes();
                for (int splits : new int[] {2, 4, 8, 16}) {
                  b.mla(32, 16, 640, splits);
                }
                for (int splits : new int[] {1, 2, 3}) {
                  b.mla(128, 16, 640, splits);
                }
                for (int splits : new int[] {4, 8, 16, 32}) {
                  b.mla(1, 16, 512, splits);
                }
              }
              k.mla().useMlaStages(1);
              b.mlaParts(1, 16, 512);
              b.mlaParts(32, 16, 640);
              b.gemm(384, 2816, 2048);
              b.gemm(4096, 2816, 2048);
              b.gemm(384, 2048, 1408);
              for (int len : new int[] {512, 4096}) {
                for (PrefillPath path : PrefillPath.values()) {
                  b.mlaPrefill(16, len, path);
                }
              }
              GqaBench.run(b, k, s);
              SamplerBench.run(b, k, s);
              b.print();
            }
          });
    }
  }

  /** Median milliseconds of one launch of {@code body(i)} (i cycles over copies). */
  double time(IntConsumer body) {
    try (CudaGraph g =
            stream.capture(
                () -> {
                  for (int i = 0; i < REPS; i++) {
                    body.accept(i);
                  }
                });
        CudaEvent a = CudaEvent.create();
        CudaEvent b = CudaEvent.create()) {
      g.launch(stream);
      g.launch(stream);
      double[] ms = new double[TRIALS];
      for (int t = 0; t < TRIALS; t++) {
        a.record(stream);
        g.launch(stream);
        b.record(stream);
        b.synchronize();
        ms[t] = b.millisSince(a) / REPS;
      }
      Arrays.sort(ms);
      return ms[TRIALS / 2];
    }
  }

  DeviceBuffer randomBf16(long n, float scale) {
    short[] bits = new short[(int) Math.min(n, 1 << 24)];
    for (int i = 0; i < bits.length; i++) {
      bits[i] = Numerics.floatToBf16((float) ((random.nextDouble() * 2 - 1) * scale));
    }
    DeviceBuffer b = DeviceBuffer.allocate(2 * n);
    b.upload(stream, bits);
    // Fill the rest by doubling copies of the random prefix.
    for (long done = bits.length; done < n; ) {
      long chunk = Math.min(done, n - done);
      CudaDriver.get().memcpyDtoDAsync(b.ptr(2 * done), b.ptr(), 2 * chunk, stream.handle());
      done += chunk;
    }
    return b;
  }

  /** {@code n} random e4m3 codes (no NaN code), as {@link #randomBf16} fills its buffer. */
  DeviceBuffer randomFp8Codes(long n) {
    short[] pairs = new short[(int) Math.min((n + 1) / 2, 1 << 24)];
    for (int i = 0; i < pairs.length; i++) {
      pairs[i] = (short) (fp8Code() | fp8Code() << 8);
    }
    long bytes = (n + 1) / 2 * 2;
    DeviceBuffer b = DeviceBuffer.allocate(bytes);
    b.upload(stream, pairs);
    for (long done = 2L * pairs.length; done < bytes; ) {
      long chunk = Math.min(done, bytes - done);
      CudaDriver.get().memcpyDtoDAsync(b.ptr(done), b.ptr(), chunk, stream.handle());
      done += chunk;
    }
    return b;
  }

  private int fp8Code() {
    int c = random.nextInt(256);
    return (c & 0x7f) == 0x7f ? c ^ 1 : c;
  }

  DeviceBuffer randomF32(int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) (random.nextDouble() * 2 - 1);
    }
    DeviceBuffer b = DeviceBuffer.allocate(4L * n);
    b.upload(stream, v);
    return b;
  }

  private void gemv(int m, int kDim) {
    long bytes = 2L * m * kDim;
    int copies = (int) Math.max(2, (512L << 20) / bytes);
    DeviceBuffer w = randomBf16(bytes / 2 * copies, 0.05f);
    DeviceBuffer x = randomF32(kDim);
    DeviceBuffer y = DeviceBuffer.allocate(4L * m);
    DeviceBuffer xb = DeviceBuffer.allocate(2L * kDim);
    k.toBf16(stream, xb.ptr(), x.ptr(), kDim);
    double ms =
        time(i -> k.gemv(stream, y.ptr(), w.ptr((i % copies) * bytes), x.ptr(), m, kDim, 1));
    double gbs = (bytes + 4.0 * kDim + 4.0 * m) / (ms * 1e6);
    row(String.format(Locale.ROOT, "gemv bf16 %dx%d, 1 token", m, kDim), ms, gbs);
    try (CublasHandle blas = new CublasHandle(stream)) {
      double msBlas =
          time(i -> blas.linear(y.ptr(), xb.ptr(), w.ptr((i % copies) * bytes), 1, m, kDim, false));
      row(
          String.format(Locale.ROOT, "  cuBLAS GemmEx same shape"),
          msBlas,
          (bytes + 2.0 * kDim + 4.0 * m) / (msBlas * 1e6));
    }
    double ms4 =
        time(i -> k.gemv(stream, y.ptr(), w.ptr((i % copies) * bytes), x.ptr(), m, kDim, 1));
    row("  gemv repeat (spread)", ms4, (bytes + 4.0 * kDim + 4.0 * m) / (ms4 * 1e6));
    w.close();
    x.close();
    y.close();
    xb.close();
  }

  /** cuBLAS bf16 GEMM {@code y[n, m] = x[n, k] W^T} (f32 out), as the grouped experts run it. */
  private void gemm(int n, int m, int kDim) {
    DeviceBuffer w = randomBf16((long) m * kDim, 0.05f);
    DeviceBuffer x = randomBf16((long) n * kDim, 1f);
    DeviceBuffer y = DeviceBuffer.allocate(4L * n * m);
    try (CublasHandle blas = new CublasHandle(stream)) {
      double ms = time(i -> blas.linear(y.ptr(), x.ptr(), w.ptr(), n, m, kDim, false));
      double tflops = 2.0 * n * m * kDim / (ms * 1e9);
      row(
          String.format(
              Locale.ROOT, "cuBLAS GemmEx %dx%dx%d (n x m x k): %.0f TFLOP/s", n, m, kDim, tflops),
          ms,
          (2.0 * m * kDim + 2.0 * n * kDim + 4.0 * n * m) / (ms * 1e6));
    }
    w.close();
    x.close();
    y.close();
  }

  /** The four launches of MLA decode timed one by one (V2-Lite shape, tensor cores). */
  private void mlaParts(int batch, int heads, int len) {
    int lora = MlaInputs.LORA;
    // The splits a decode graph captures (nominal context 2048).
    int splits = MlaKernels.mlaSplits(batch, heads, 2048, 132, 128);
    String shape = String.format(Locale.ROOT, "batch %d, context %d", batch, len);
    try (MlaInputs m = MlaInputs.decode(this, batch, heads, len);
        MlaWorkspace ws = new MlaWorkspace(batch, splits, heads, lora, MlaInputs.ROPE)) {
      row("mla part absorb_q, " + shape, time(i -> m.absorb(k, stream, ws, batch, heads)), 0);
      row(
          "mla part split + combine, " + splits + " splits, " + shape,
          time(i -> m.splitAttention(k, stream, ws, batch, heads, splits)),
          0);
      // The partials the row above left behind are valid input for the combine alone.
      row(
          "mla part combine, " + splits + " splits, " + shape,
          time(i -> k.mla().mlaCombine(stream, ws, 0, batch, heads, lora, splits)),
          0);
      row("mla part out_v, " + shape, time(i -> m.outV(k, stream, ws, batch, heads)), 0);
    }
  }

  /**
   * One MoE layer's routed experts: tensor-core kernels in passes of {@code passTokens} (32 or 64),
   * CUDA-core ones for 0.
   */
  private void moe(int n, int e, int topK, int hidden, int inter, int passTokens) {
    boolean mma = passTokens > 0;
    DeviceBuffer w13 = randomBf16((long) e * 2 * inter * hidden, 0.02f);
    DeviceBuffer w2 = randomBf16((long) e * hidden * inter, 0.02f);
    DeviceBuffer x = randomF32(n * hidden);
    DeviceBuffer out = DeviceBuffer.allocate(4L * n * hidden);
    int routings = 8;
    RandomRoutings routed = RandomRoutings.of(random, routings, n, e, topK);
    int[] experts = routed.experts();
    float[] weights = routed.weights();
    long activeTotal = routed.activeTotal();
    DeviceBuffer de = DeviceBuffer.allocate(4L * experts.length);
    de.upload(stream, experts);
    DeviceBuffer dw = DeviceBuffer.allocate(4L * weights.length);
    dw.upload(stream, weights);
    try (MoeWorkspace ws = new MoeWorkspace(n, e, topK, hidden, inter)) {
      long pairBytes = 4L * n * topK;
      double ms =
          time(
              i -> {
                int r = i % routings;
                if (mma) {
                  k.moe()
                      .moeExpertsMma(
                          stream,
                          ws,
                          out.ptr(),
                          x.ptr(),
                          w13.ptr(),
                          w2.ptr(),
                          de.ptr(r * pairBytes),
                          dw.ptr(r * pairBytes),
                          n,
                          hidden,
                          inter,
                          false,
                          passTokens);
                  return;
                }
                k.moe()
                    .moeExpertsFused(
                        stream,
                        ws,
                        out.ptr(),
                        x.ptr(),
                        w13.ptr(),
                        w2.ptr(),
                        de.ptr(r * pairBytes),
                        dw.ptr(r * pairBytes),
                        n,
                        hidden,
                        inter,
                        false);
              });
      double active = activeTotal / (double) routings;
      double bytes = active * 3.0 * hidden * inter * 2;
      row(
          String.format(
              Locale.ROOT,
              "moe V2-Lite layer (64e top-6 2048/1408) batch %d, %.1f experts active%s",
              n,
              active,
              mma ? passTokens == MoeKernels.MOE_MMA_PASS_TOKENS ? ", mma" : ", mma64" : ""),
          ms,
          bytes / (ms * 1e6));
    }
    for (DeviceBuffer b : new DeviceBuffer[] {w13, w2, x, out, de, dw}) {
      b.close();
    }
  }

  /** The MLA decode shapes of the model table (V2-Lite heads), default split counts. */
  private void mlaShapes() {
    mla(1, 16, 512);
    mla(1, 16, 4096);
    mla(1, 16, 32768);
    mla(8, 16, 640);
    mla(32, 16, 640);
    mla(32, 16, 4096);
    mla(128, 16, 640);
  }

  private void mla(int batch, int heads, int len) {
    mla(batch, heads, len, MlaKernels.mlaSplits(batch, heads, len, 132, 256));
  }

  /** MLA decode with a given split count (to place {@link MlaKernels#mlaSplits}). */
  private void mla(int batch, int heads, int len, int splits) {
    int lora = MlaInputs.LORA;
    int rope = MlaInputs.ROPE;
    try (MlaInputs m = MlaInputs.decode(this, batch, heads, len);
        MlaWorkspace ws = new MlaWorkspace(batch, splits, heads, lora, rope)) {
      double ms =
          time(
              i -> {
                m.absorb(k, stream, ws, batch, heads);
                m.splitAttention(k, stream, ws, batch, heads, splits);
                m.outV(k, stream, ws, batch, heads);
              });
      double bytes = 2.0 * batch * len * (lora + rope);
      row(
          String.format(
              Locale.ROOT,
              "mla decode %s, %d heads, batch %d, context %d, %d splits",
              k.mla().mlaUsesTensorCores(lora, rope)
                  ? "tensor cores "
                      + k.mla().mlaStages()
                      + " stage"
                      + (k.mla().mlaStages() == 1 ? "" : "s")
                  : "CUDA cores",
              heads,
              batch,
              len,
              splits),
          ms,
          bytes / (ms * 1e6));
    }
  }

  /** MLA decode through the fused launch ({@link dev.ringmaster.cuda.kernels.MlaFusedDecode}). */
  private void mlaFused(int batch, int heads, int len) {
    try (MlaInputs m = MlaInputs.decode(this, batch, heads, len)) {
      double ms =
          time(
              i ->
                  k.mlaFusedDecode()
                      .attention(
                          stream,
                          m.out.ptr(),
                          m.q.ptr(),
                          m.kvB.ptr(),
                          m.cache.ptr(),
                          m.table.ptr(),
                          m.blocksPerSeq,
                          m.seqs.ptr(),
                          m.positions.ptr(),
                          batch,
                          heads,
                          MlaInputs.NOPE,
                          MlaInputs.ROPE,
                          MlaInputs.V,
                          MlaInputs.LORA,
                          MlaInputs.BLOCK,
                          MlaInputs.SCALE,
                          null));
      double bytes = 2.0 * batch * len * (MlaInputs.LORA + MlaInputs.ROPE);
      row(
          String.format(
              Locale.ROOT,
              "mla decode fused, %d heads, batch %d, context %d, 8 splits",
              heads,
              batch,
              len),
          ms,
          bytes / (ms * 1e6));
    }
  }

  /** How {@link #mlaPrefill} runs a prompt's attention. */
  private enum PrefillPath {
    /** The split kernels on CUDA cores, as prefill ran before the GEMM paths. */
    SPLIT_KERNELS,
    /** Absorbed form: query absorption, GEMMs over the latent context, output projection. */
    ABSORBED_GEMM,
    /** Expanded form: per-head keys and values up-projected from the latents, GEMMs per head. */
    EXPANDED_GEMM
  }

  /** MLA attention of one {@code len}-token prompt (V2-Lite shape) through {@code path}. */
  private void mlaPrefill(int heads, int len, PrefillPath path) {
    MlaInputs m = MlaInputs.prompt(this, heads, len);
    int nope = MlaInputs.NOPE;
    int rope = MlaInputs.ROPE;
    int v = MlaInputs.V;
    int lora = MlaInputs.LORA;
    int block = MlaInputs.BLOCK;
    int d = lora + rope;
    int blocksPerSeq = m.blocksPerSeq;
    DeviceBuffer cache = m.cache;
    DeviceBuffer dt = m.table;
    DeviceBuffer ds = m.seqs;
    DeviceBuffer dp = m.positions;
    DeviceBuffer q = m.q;
    DeviceBuffer kvB = m.kvB;
    DeviceBuffer out = m.out;
    int splits = MlaKernels.mlaSplits(len, heads, len, 132, 2);
    k.mla().useMlaTensorCores(false);
    try (MlaWorkspace ws = new MlaWorkspace(len, splits, heads, lora, rope);
        CublasHandle blas = new CublasHandle(stream);
        var prefill =
            new dev.ringmaster.cuda.kernels.MlaPrefillAttention(
                heads,
                nope,
                lora,
                rope,
                v,
                len,
                len,
                dev.ringmaster.cuda.kernels.MlaPrefillAttention.DEFAULT_SCORE_BUDGET,
                dev.ringmaster.cuda.kernels.MlaPrefillAttention.DEFAULT_EXPANDED_BYTES)) {
      java.util.function.BiConsumer<Integer, java.util.function.Consumer<String>> run =
          (i, mark) -> {
            if (path == PrefillPath.EXPANDED_GEMM) {
              prefill.attendExpanded(
                  stream,
                  k,
                  blas,
                  q.ptr(),
                  kvB.ptr(),
                  out.ptr(),
                  cache.ptr(),
                  dt.ptr(),
                  dp.ptr(),
                  0,
                  len,
                  0,
                  block,
                  0.07f,
                  mark);
            } else if (path == PrefillPath.ABSORBED_GEMM) {
              k.mla().mlaAbsorb(stream, ws, q.ptr(), kvB.ptr(), len, heads, nope, rope, v, lora);
              prefill.attend(
                  stream,
                  k,
                  blas,
                  ws,
                  cache.ptr(),
                  dt.ptr(),
                  dp.ptr(),
                  0,
                  len,
                  0,
                  block,
                  0.07f,
                  mark);
              k.mla().mlaOutV(stream, ws, out.ptr(), kvB.ptr(), len, heads, nope, v, lora);
            } else {
              k.mla()
                  .mlaAttention(
                      stream,
                      ws,
                      out.ptr(),
                      q.ptr(),
                      kvB.ptr(),
                      cache.ptr(),
                      dt.ptr(),
                      blocksPerSeq,
                      ds.ptr(),
                      dp.ptr(),
                      len,
                      heads,
                      nope,
                      rope,
                      v,
                      lora,
                      block,
                      splits,
                      0.07f);
            }
          };
      double ms = time(i -> run.accept(i, label -> {}));
      eagerHostCost(path + " " + len, run);
      row(
          String.format(
              Locale.ROOT,
              "mla prefill %s, %d heads, one prompt of %d tokens",
              path.name().toLowerCase(Locale.ROOT).replace('_', ' '),
              heads,
              len),
          ms,
          2.0 * len * d / (ms * 1e6));
    } finally {
      k.mla().useMlaTensorCores(true);
    }
    m.close();
  }

  /**
   * Prints where the host spends its time when {@code run} is launched eagerly (as the model's
   * prefill is): host milliseconds per mark label, and the eager GPU time per iteration, so that a
   * path bound by its launch cost (cuBLAS's per-call setup) shows against its graph replay.
   */
  private void eagerHostCost(
      String what,
      java.util.function.BiConsumer<Integer, java.util.function.Consumer<String>> run) {
    int iters = 5;
    run.accept(0, label -> {});
    stream.synchronize();
    java.util.Map<String, Long> hostNs = new java.util.LinkedHashMap<>();
    long[] last = {0};
    try (CudaEvent a = CudaEvent.create();
        CudaEvent b = CudaEvent.create()) {
      long t0 = System.nanoTime();
      last[0] = t0;
      a.record(stream);
      for (int i = 0; i < iters; i++) {
        run.accept(
            i,
            label -> {
              long now = System.nanoTime();
              hostNs.merge(label, now - last[0], Long::sum);
              last[0] = now;
            });
      }
      long submitted = System.nanoTime();
      b.record(stream);
      b.synchronize();
      StringBuilder sb =
          new StringBuilder(
              String.format(
                  Locale.ROOT,
                  "eager %s: GPU %.3f ms/iter, host submit %.3f ms/iter;",
                  what,
                  b.millisSince(a) / iters,
                  (submitted - t0) / 1e6 / iters));
      hostNs.forEach(
          (k2, v) -> sb.append(String.format(Locale.ROOT, " %s %.3f", k2, v / 1e6 / iters)));
      System.out.println(sb);
    }
  }

  /**
   * Inputs of MLA attention in the V2-Lite shape: a paged bf16 cache whose blocks are handed out in
   * order, the queries' sequences and positions, random queries and kv_b, and the output buffer.
   */
  private static final class MlaInputs implements AutoCloseable {
    static final int NOPE = 128;
    static final int ROPE = 64;
    static final int V = 128;
    static final int LORA = 512;
    static final int BLOCK = 64;
    static final float SCALE = 0.07f;

    final int blocksPerSeq;
    final DeviceBuffer cache;
    final DeviceBuffer table;
    final DeviceBuffer seqs;
    final DeviceBuffer positions;
    final DeviceBuffer q;
    final DeviceBuffer kvB;
    final DeviceBuffer out;

    /** Absorbed queries of the first {@code count} query tokens into {@code ws}. */
    void absorb(RingmasterKernels k, CudaStream s, MlaWorkspace ws, int count, int heads) {
      k.mla().mlaAbsorb(s, ws, q.ptr(), kvB.ptr(), count, heads, NOPE, ROPE, V, LORA);
    }

    /** Split attention and combine of the first {@code count} query tokens in {@code ws}. */
    void splitAttention(
        RingmasterKernels k, CudaStream s, MlaWorkspace ws, int count, int heads, int splits) {
      k.mla()
          .mlaSplitAttention(
              s,
              ws,
              cache.ptr(),
              table.ptr(),
              blocksPerSeq,
              seqs.ptr(),
              positions.ptr(),
              0,
              count,
              heads,
              ROPE,
              LORA,
              BLOCK,
              splits,
              SCALE);
    }

    /** Output projection of the first {@code count} query tokens' latent context into out. */
    void outV(RingmasterKernels k, CudaStream s, MlaWorkspace ws, int count, int heads) {
      k.mla().mlaOutV(s, ws, out.ptr(), kvB.ptr(), count, heads, NOPE, V, LORA);
    }

    /**
     * {@code batch} sequences of {@code len} cached tokens, one query each at the last position.
     */
    static MlaInputs decode(KernelBench b, int batch, int heads, int len) {
      int[] seq = new int[batch];
      int[] pos = new int[batch];
      for (int i = 0; i < batch; i++) {
        seq[i] = i;
        pos[i] = len - 1;
      }
      return new MlaInputs(b, batch, len, heads, seq, pos);
    }

    /** One prompt of {@code len} tokens, every position a query. */
    static MlaInputs prompt(KernelBench b, int heads, int len) {
      int[] pos = new int[len];
      for (int t = 0; t < len; t++) {
        pos[t] = t;
      }
      return new MlaInputs(b, 1, len, heads, new int[len], pos);
    }

    private MlaInputs(KernelBench b, int numSeqs, int len, int heads, int[] seq, int[] pos) {
      blocksPerSeq = (len + BLOCK - 1) / BLOCK;
      cache = b.randomBf16((long) numSeqs * blocksPerSeq * BLOCK * (LORA + ROPE), 1f);
      int[] ids = new int[numSeqs * blocksPerSeq];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = i;
      }
      table = upload(b, ids);
      seqs = upload(b, seq);
      positions = upload(b, pos);
      q = b.randomF32(seq.length * heads * (NOPE + ROPE));
      kvB = b.randomBf16((long) heads * (NOPE + V) * LORA, 0.05f);
      out = DeviceBuffer.allocate(4L * seq.length * heads * V);
    }

    private static DeviceBuffer upload(KernelBench b, int[] values) {
      DeviceBuffer d = DeviceBuffer.allocate(4L * values.length);
      d.upload(b.stream, values);
      return d;
    }

    @Override
    public void close() {
      for (DeviceBuffer d : new DeviceBuffer[] {cache, table, seqs, positions, q, kvB, out}) {
        d.close();
      }
    }
  }

  void row(String what, double ms, double gbs) {
    rows.add(String.format(Locale.ROOT, "| %-78s | %9.1f | %8.0f |", what, ms * 1000, gbs));
  }

  private void print() {
    System.out.println();
    System.out.printf(Locale.ROOT, "| %-78s | %9s | %8s |%n", "kernel", "us", "GB/s");
    System.out.println("|" + "-".repeat(80) + "|" + "-".repeat(11) + "|" + "-".repeat(10) + "|");
    rows.forEach(System.out::println);
  }
}
