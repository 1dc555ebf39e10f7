package dev.ringmaster.cuda.kernels;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class MlaGpuTest {
  /** Which attention path a case runs. */
  enum Path {
    /** The CUDA-core split kernel: f32 queries, exact to rounding (1e-4). */
    CUDA_CORES,
    /** The tensor-core split kernel: bf16 queries and probabilities (1e-2). */
    TENSOR_CORES,
    /** The tensor-core split kernel with two cache tiles in flight per block (1e-2). */
    TENSOR_CORES_2_STAGES,
    /**
     * Prefill runs of 8 or more tokens through the GEMM path (with a score budget small enough to
     * force several query tiles), the other tokens through the tensor-core kernel by list (1e-2).
     */
    GEMM_PREFILL,
    /**
     * As {@link #GEMM_PREFILL}, with the runs in the expanded form (per-head keys and values
     * up-projected from the latents, 1e-2).
     */
    EXPANDED_PREFILL,
    /**
     * As {@link #GEMM_PREFILL}, every second run in the expanded form: the absorbed projections
     * cover the split tokens and the absorbed runs only, the expanded runs write their own rows
     * (1e-2).
     */
    MIXED_PREFILL,
    /**
     * The fused kernel (absorb, attention in 8 splits, combine and out_v in one launch by a cluster
     * per token and head), f32 throughout (1e-4); only shapes it supports.
     */
    FUSED;

    /** Whether some prefill runs take the expanded form. */
    boolean expands() {
      return this == EXPANDED_PREFILL || this == MIXED_PREFILL;
    }
  }

  @ParameterizedTest
  @CsvSource({
    // heads, nope, rope, v, lora, blockSize, seq lengths (;-separated, "d": only its last
    // position is queried, a decode row), prefill, splits
    "16,128,64,128,512,64,1;70;300,false,1",
    "16,128,64,128,512,64,1000;5;129,false,8",
    "3,32,16,24,64,16,37;1;16;17,false,3",
    "5,16,32,40,96,8,23;9,true,2",
    "16,128,64,128,512,64,200,true,4",
    "16,128,64,128,512,64,300;3;40,true,4",
    "128,128,64,128,512,64,4100,false,64",
    "16,128,64,128,512,64,1;70;300,false,200",
    // latent width not a multiple of 8 (scalar projection paths), 13 prefill tokens (partial block)
    "3,24,16,20,100,16,13,true,2",
    // wider no-rope query and value heads (4 value rows per warp in the fused kernel), a shorter
    // rotary part
    "8,192,64,256,512,16,1;33;2;200,false,1",
    "4,64,32,64,512,16,77;5,true,3",
    // mixed steps: decode rows at long contexts before, between and after prompt runs
    "16,128,64,128,512,64,300d;40;70d;129d;33;1;60d,true,4",
    "16,128,64,128,512,16,90d;17;200;5d,true,2",
    "3,32,16,24,64,16,37d;24;1d;16;19d,true,3"
  })
  void pagedAbsorbedAttentionMatchesReference(
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int lora,
      int blockSize,
      String lengths,
      boolean prefill,
      int splits) {
    for (Path path : Path.values()) {
      // The GEMM path gathers rows in 16-byte vectors: it needs D % 8 == 0 (the model checks too).
      boolean gemm = path == Path.GEMM_PREFILL || path.expands();
      boolean expandable = nope % 8 == 0 && vDim % 8 == 0 && ropeDim % 8 == 0;
      if (path.expands() && !expandable) {
        continue;
      }
      if (path == Path.FUSED && !MlaFusedDecode.supports(nope, ropeDim, vDim, lora)) {
        continue;
      }
      if (!gemm || (prefill && (lora + ropeDim) % 8 == 0)) {
        check(path, heads, nope, ropeDim, vDim, lora, blockSize, lengths, prefill, splits);
      }
    }
  }

  private static void check(
      Path path,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int lora,
      int blockSize,
      String lengths,
      boolean prefill,
      int splits) {
    Rand r = new Rand();
    int d = lora + ropeDim;
    String[] parts = lengths.split(";");
    int[] lens = new int[parts.length];
    boolean[] decodeRow = new boolean[parts.length];
    for (int i = 0; i < parts.length; i++) {
      decodeRow[i] = parts[i].endsWith("d");
      lens[i] =
          Integer.parseInt(decodeRow[i] ? parts[i].substring(0, parts[i].length() - 1) : parts[i]);
    }
    int seqs = lens.length;
    int maxBlocks = 0;
    int totalBlocks = 0;
    for (int len : lens) {
      maxBlocks = Math.max(maxBlocks, (len + blockSize - 1) / blockSize);
      totalBlocks += (len + blockSize - 1) / blockSize;
    }
    // Blocks handed out in shuffled order, with spare blocks in the pool.
    int pool = totalBlocks + 3;
    List<Integer> free = new ArrayList<>();
    for (int b = 0; b < pool; b++) {
      free.add(b);
    }
    Collections.shuffle(free, new java.util.Random(r.seed()));
    int[] table = new int[seqs * maxBlocks];
    int next = 0;
    for (int s = 0; s < seqs; s++) {
      for (int b = 0; b < (lens[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
    }
    // Every cached token's row, appended through the append kernel.
    int cached = 0;
    for (int len : lens) {
      cached += len;
    }
    float[] kv = r.uniform(cached * d, 1f);
    Rand.Bf16 kvRounded = Rand.Bf16.of(kv);
    int[] slots = new int[cached];
    float[][][] rows = new float[seqs][][];
    int at = 0;
    for (int s = 0; s < seqs; s++) {
      rows[s] = new float[lens[s]][];
      for (int p = 0; p < lens[s]; p++, at++) {
        slots[at] = table[s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
        rows[s][p] = java.util.Arrays.copyOfRange(kvRounded.values(), at * d, (at + 1) * d);
      }
    }
    // Queries: decode = last position of each sequence; prefill = every position of each but the
    // decode rows.
    List<int[]> queries = new ArrayList<>();
    for (int s = 0; s < seqs; s++) {
      if (prefill && !decodeRow[s]) {
        for (int p = 0; p < lens[s]; p++) {
          queries.add(new int[] {s, p});
        }
      } else {
        queries.add(new int[] {s, lens[s] - 1});
      }
    }
    int t = queries.size();
    int[] tokenSeq = queries.stream().mapToInt(q -> q[0]).toArray();
    int[] tokenPos = queries.stream().mapToInt(q -> q[1]).toArray();
    float[] q = r.uniform(t * heads * (nope + ropeDim), 1f);
    Rand.Bf16 kvB = r.bf16(heads * (nope + vDim) * lora, 0.1f);
    float scale = (float) (1.0 / Math.sqrt(nope + ropeDim));
    float[] want =
        reference(
            q, kvB.values(), rows, tokenSeq, tokenPos, heads, nope, ropeDim, vDim, lora, scale);
    int maxBlocksF = maxBlocks;
    int cachedTokens = cached;
    Gpu.run(
        s -> {
          DeviceBuffer cache = s.alloc(2L * pool * blockSize * d);
          cache.poison(s.stream());
          var k = Gpu.kernels();
          k.mla()
              .mlaCacheAppend(
                  s.stream(), cache.ptr(), s.f32(kv).ptr(), d, s.i32(slots).ptr(), cachedTokens, d);
          k.mla().useMlaTensorCores(path != Path.CUDA_CORES);
          k.mla().useMlaStages(path == Path.TENSOR_CORES_2_STAGES ? 2 : 1);
          try (MlaWorkspace ws = new MlaWorkspace(t, splits, heads, lora, ropeDim)) {
            ws.qLatent.poison(s.stream());
            ws.partialCtx.poison(s.stream());
            ws.ctx.poison(s.stream());
            DeviceBuffer out = s.poisoned((long) t * heads * vDim);
            if (path == Path.GEMM_PREFILL || path.expands()) {
              gemmPrefill(
                  path,
                  s,
                  k,
                  ws,
                  out.ptr(),
                  q,
                  kvB,
                  cache.ptr(),
                  table,
                  maxBlocksF,
                  tokenSeq,
                  tokenPos,
                  heads,
                  nope,
                  ropeDim,
                  vDim,
                  lora,
                  blockSize,
                  splits,
                  scale);
            } else if (path == Path.FUSED) {
              k.mlaFusedDecode()
                  .attention(
                      s.stream(),
                      out.ptr(),
                      s.f32(q).ptr(),
                      s.bf16(kvB.bits()).ptr(),
                      cache.ptr(),
                      s.i32(table).ptr(),
                      maxBlocksF,
                      s.i32(tokenSeq).ptr(),
                      s.i32(tokenPos).ptr(),
                      t,
                      heads,
                      nope,
                      ropeDim,
                      vDim,
                      lora,
                      blockSize,
                      scale,
                      null);
            } else {
              k.mla()
                  .mlaAttention(
                      s.stream(),
                      ws,
                      out.ptr(),
                      s.f32(q).ptr(),
                      s.bf16(kvB.bits()).ptr(),
                      cache.ptr(),
                      s.i32(table).ptr(),
                      maxBlocksF,
                      s.i32(tokenSeq).ptr(),
                      s.i32(tokenPos).ptr(),
                      t,
                      heads,
                      nope,
                      ropeDim,
                      vDim,
                      lora,
                      blockSize,
                      splits,
                      scale);
            }
            double tol = path == Path.CUDA_CORES || path == Path.FUSED ? 1e-4 : 1e-2;
            Compare.assertClose(
                "mla " + path + " seed " + r.seed(), s.read(out, t * heads * vDim), want, tol);
          } finally {
            k.mla().useMlaTensorCores(true);
            k.mla().useMlaStages(1);
          }
        });
  }

  /**
   * Runs of 8+ tokens of one sequence through {@link MlaPrefillAttention} (absorbed or expanded, by
   * {@code path}), the rest by list. As in the model, the absorbed projections run over the ranges
   * of split tokens and absorbed runs only (the poisoned workspace and output would show a row they
   * miss), and the expanded runs write their own rows.
   */
  private static void gemmPrefill(
      Path path,
      dev.ringmaster.cuda.testing.DeviceScope s,
      RingmasterKernels k,
      MlaWorkspace ws,
      long out,
      float[] q,
      Rand.Bf16 kvB,
      long cache,
      int[] table,
      int maxBlocks,
      int[] tokenSeq,
      int[] tokenPos,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int lora,
      int blockSize,
      int splits,
      float scale) {
    int t = tokenSeq.length;
    long kvBPtr = s.bf16(kvB.bits()).ptr();
    long tablePtr = s.i32(table).ptr();
    long posPtr = s.i32(tokenPos).ptr();
    long qPtr = s.f32(q).ptr();
    // {first, count, expanded}
    List<int[]> runs = new ArrayList<>();
    List<Integer> rest = new ArrayList<>();
    // {first, end} of consecutive tokens needing absorbed queries, merged where they touch
    List<int[]> absorbed = new ArrayList<>();
    for (int i = 0; i < t; ) {
      int j = i + 1;
      while (j < t && tokenSeq[j] == tokenSeq[i] && tokenPos[j] == tokenPos[j - 1] + 1) {
        j++;
      }
      boolean expanded = false;
      if (j - i >= 8) {
        expanded =
            path == Path.EXPANDED_PREFILL || (path == Path.MIXED_PREFILL && runs.size() % 2 == 1);
        runs.add(new int[] {i, j - i, expanded ? 1 : 0});
      } else {
        for (int x = i; x < j; x++) {
          rest.add(x);
        }
      }
      if (!expanded) {
        if (!absorbed.isEmpty() && absorbed.getLast()[1] == i) {
          absorbed.getLast()[1] = j;
        } else {
          absorbed.add(new int[] {i, j});
        }
      }
      i = j;
    }
    for (int[] a : absorbed) {
      k.mla()
          .mlaAbsorbRange(
              s.stream(), ws, qPtr, kvBPtr, a[0], a[1] - a[0], heads, nope, ropeDim, vDim, lora);
    }
    if (!rest.isEmpty()) {
      int[] list = rest.stream().mapToInt(Integer::intValue).toArray();
      k.mla()
          .mlaSplitAttention(
              s.stream(),
              ws,
              cache,
              tablePtr,
              maxBlocks,
              s.i32(tokenSeq).ptr(),
              posPtr,
              s.i32(list).ptr(),
              list.length,
              heads,
              ropeDim,
              lora,
              blockSize,
              splits,
              scale);
    }
    int maxContext = java.util.Arrays.stream(tokenPos).max().orElse(0) + 1;
    // Room for three query rows at the longest context: long runs take several tiles.
    long budget = 3L * heads * maxContext;
    try (var blas = new dev.ringmaster.cuda.blas.CublasHandle(s.stream());
        var prefill =
            new MlaPrefillAttention(
                heads,
                nope,
                lora,
                ropeDim,
                vDim,
                maxContext,
                t,
                budget,
                path.expands() ? 1L << 30 : 0)) {
      if (path.expands() && prefill.expandedMaxContext() < maxContext) {
        throw new AssertionError("the expanded scratch does not hold the test's context");
      }
      for (int[] run : runs) {
        if (run[2] == 1) {
          continue;
        }
        int seq = tokenSeq[run[0]];
        prefill.attend(
            s.stream(),
            k,
            blas,
            ws,
            cache,
            tablePtr + 4L * seq * maxBlocks,
            posPtr,
            run[0],
            run[1],
            tokenPos[run[0]],
            blockSize,
            scale,
            label -> {});
      }
      for (int[] a : absorbed) {
        k.mla()
            .mlaOutVRange(s.stream(), ws, out, kvBPtr, a[0], a[1] - a[0], heads, nope, vDim, lora);
      }
      for (int[] run : runs) {
        if (run[2] == 0) {
          continue;
        }
        int seq = tokenSeq[run[0]];
        prefill.attendExpanded(
            s.stream(),
            k,
            blas,
            qPtr,
            kvBPtr,
            out,
            cache,
            tablePtr + 4L * seq * maxBlocks,
            posPtr,
            run[0],
            run[1],
            tokenPos[run[0]],
            blockSize,
            scale,
            label -> {});
      }
      s.stream().synchronize();
    }
  }

  static float[] reference(
      float[] q,
      float[] kvB,
      float[][][] rows,
      int[] tokenSeq,
      int[] tokenPos,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int lora,
      float scale) {
    int t = tokenSeq.length;
    float[] out = new float[t * heads * vDim];
    int qk = nope + ropeDim;
    for (int i = 0; i < t; i++) {
      float[][] cache = rows[tokenSeq[i]];
      int len = tokenPos[i] + 1;
      for (int h = 0; h < heads; h++) {
        int qOff = (i * heads + h) * qk;
        int rowBase = h * (nope + vDim);
        double[] qLat = new double[lora];
        for (int dd = 0; dd < nope; dd++) {
          for (int c = 0; c < lora; c++) {
            qLat[c] += q[qOff + dd] * (double) kvB[(rowBase + dd) * lora + c];
          }
        }
        double[] sc = new double[len];
        double max = Double.NEGATIVE_INFINITY;
        for (int p = 0; p < len; p++) {
          double v = 0;
          for (int c = 0; c < lora; c++) {
            v += qLat[c] * cache[p][c];
          }
          for (int j = 0; j < ropeDim; j++) {
            v += q[qOff + nope + j] * (double) cache[p][lora + j];
          }
          sc[p] = v * scale;
          max = Math.max(max, sc[p]);
        }
        double sum = 0;
        for (int p = 0; p < len; p++) {
          sc[p] = Math.exp(sc[p] - max);
          sum += sc[p];
        }
        double[] ctx = new double[lora];
        for (int p = 0; p < len; p++) {
          for (int c = 0; c < lora; c++) {
            ctx[c] += sc[p] / sum * cache[p][c];
          }
        }
        for (int j = 0; j < vDim; j++) {
          double v = 0;
          for (int c = 0; c < lora; c++) {
            v += kvB[(rowBase + nope + j) * lora + c] * ctx[c];
          }
          out[(i * heads + h) * vDim + j] = (float) v;
        }
      }
    }
    return out;
  }
}
