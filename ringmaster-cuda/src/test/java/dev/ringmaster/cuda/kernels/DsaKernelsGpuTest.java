package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.runtime.KernelTuning;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The DeepSeek Sparse Attention kernels against plain Java references on random paged caches
 * (blocks in shuffled order): indexer scores (f32 to rounding), the top-k sets (exactly the CPU's
 * rule, ties included: a third of the keys repeat an earlier key, so equal scores are common) and
 * absorbed MLA attention over the selected positions (the dense reference over just those rows).
 * Query rows are the last position of each sequence and a few earlier ones, so contexts below, at
 * and above {@code topK} meet in one launch; lengths are not multiples of the block size. Both
 * forms run: CUDA-core scores, one-block top-k and CUDA-core sparse attention; tensor-core scores,
 * the multi-block top-k (at least two blocks per row; its six-pass and its candidate form, the
 * latter with either first-pass bin) and the tensor-core sparse split kernel (bf16 queries: 1e-2 as
 * the dense tensor-core kernels, against the CUDA-core form's 1e-4).
 */
@Tag("gpu")
class DsaKernelsGpuTest {
  @ParameterizedTest
  @CsvSource({
    // index heads, index dim, topK, block size, sequence lengths (;-separated), MLA splits
    "4,16,8,16,1;8;9;37,2",
    "8,64,64,16,1000;64;65;3,4",
    "32,128,2048,64,3000;2048;2049;100,8",
    "64,128,2048,64,5001,16",
    "32,128,16,64,130000,32"
  })
  void scoresTopKAndSparseAttentionMatchTheReference(
      int heads, int dim, int topK, int blockSize, String lengths, int splits) {
    Rand r = new Rand();
    int[] lens = Arrays.stream(lengths.split(";")).mapToInt(Integer::parseInt).toArray();
    int seqs = lens.length;
    int maxBlocks = 0;
    int totalBlocks = 0;
    for (int len : lens) {
      maxBlocks = Math.max(maxBlocks, (len + blockSize - 1) / blockSize);
      totalBlocks += (len + blockSize - 1) / blockSize;
    }
    int pool = totalBlocks + 2;
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
    // Indexer keys (bf16) and MLA latent rows (bf16) of every position, written in place.
    int lora = 64;
    int ropeDim = 16;
    int mlaHeads = 3;
    int nope = 16;
    int vDim = 24;
    int d = lora + ropeDim;
    short[] keyCache = new short[pool * blockSize * dim];
    short[] latentCache = new short[pool * blockSize * d];
    float[][][] keys = new float[seqs][][];
    float[][][] latents = new float[seqs][][];
    for (int s = 0; s < seqs; s++) {
      keys[s] = new float[lens[s]][];
      latents[s] = new float[lens[s]][];
      for (int p = 0; p < lens[s]; p++) {
        int slot = table[s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
        boolean repeat = p > 0 && r.nextInt(3) == 0;
        Rand.Bf16 k = repeat ? Rand.Bf16.of(keys[s][r.nextInt(p)]) : r.bf16(dim, 1f);
        keys[s][p] = k.values();
        System.arraycopy(k.bits(), 0, keyCache, slot * dim, dim);
        Rand.Bf16 l = r.bf16(d, 1f);
        latents[s][p] = l.values();
        System.arraycopy(l.bits(), 0, latentCache, slot * d, d);
      }
    }
    List<int[]> queries = new ArrayList<>();
    java.util.Set<Long> seen = new java.util.HashSet<>();
    for (int s = 0; s < seqs; s++) {
      for (int p : new int[] {lens[s] - 1, lens[s] / 2, Math.min(lens[s] - 1, topK)}) {
        if (seen.add((long) s << 32 | p)) {
          queries.add(new int[] {s, p});
        }
      }
    }
    int t = queries.size();
    int[] tokenSeq = queries.stream().mapToInt(q -> q[0]).toArray();
    int[] tokenPos = queries.stream().mapToInt(q -> q[1]).toArray();
    float[] q = r.uniform(t * heads * dim, 1f);
    float[] w = r.uniform(t * heads, 1f);
    float scale = (float) (1.0 / Math.sqrt(dim));
    float headScale = (float) (1.0 / Math.sqrt(heads));
    int maxLen = Arrays.stream(lens).max().orElseThrow();
    int ld = (maxLen + 3) & ~3;
    float[] mlaQ = r.uniform(t * mlaHeads * (nope + ropeDim), 1f);
    Rand.Bf16 kvB = r.bf16(mlaHeads * (nope + vDim) * lora, 0.1f);
    float mlaScale = (float) (1.0 / Math.sqrt(nope + ropeDim));
    int maxBlocksF = maxBlocks;
    // Variants: [0] CUDA-core scores, one-block top-k, CUDA-core sparse attention; [1] tensor-core
    // scores, multi-block top-k (at least two blocks per row), tensor-core sparse attention; [2]
    // as [1] with the candidate form of the multi-block top-k; [3] as [2] with half-score bins, [4]
    // also with the wide ordered write.
    String[] names = {
      "CUDA cores, one-block top-k",
      "tensor cores, six-pass multi-block top-k",
      "tensor cores, candidate multi-block top-k",
      "tensor cores, candidate multi-block top-k, half bins",
      "tensor cores, candidate multi-block top-k, half bins, wide write"
    };
    int variants = names.length;
    float[][] gotScores = new float[variants][];
    int[][] gotSel = new int[variants][];
    float[][] gotAttn = new float[variants][];
    Gpu.run(
        s -> {
          var k = Gpu.kernels();
          DeviceBuffer tablePtr = s.i32(table);
          DeviceBuffer seqPtr = s.i32(tokenSeq);
          DeviceBuffer posPtr = s.i32(tokenPos);
          DeviceBuffer qPtr = s.f32(q);
          DeviceBuffer wPtr = s.f32(w);
          DeviceBuffer keyPtr = s.bf16(keyCache);
          DeviceBuffer mlaQPtr = s.f32(mlaQ);
          DeviceBuffer kvBPtr = s.bf16(kvB.bits());
          DeviceBuffer latentPtr = s.bf16(latentCache);
          int chunks = Math.max(2, DsaLaunchShapes.topKChunks(maxLen));
          DeviceBuffer state = s.alloc(DsaLaunchShapes.topKStateBytes(t, chunks));
          try {
            for (int v = 0; v < variants; v++) {
              boolean fast = v >= 1;
              k.dsa().useTopKHalfBins(v >= 3);
              k.dsa().useTopKWideWrite(v == 4);
              k.dsa().useIndexerTensorCores(fast);
              k.mla().useMlaTensorCores(fast);
              assertThat(k.dsa().indexerUsesTensorCores(heads, dim)).isEqualTo(fast);
              assertThat(k.mla().mlaUsesTensorCores(lora, ropeDim)).isEqualTo(fast);
              DeviceBuffer scores = s.poisoned((long) t * ld);
              DeviceBuffer sel = s.alloc(4L * t * topK);
              k.dsa()
                  .scores(
                      s.stream(),
                      scores.ptr(),
                      ld,
                      qPtr.ptr(),
                      wPtr.ptr(),
                      keyPtr.ptr(),
                      tablePtr.ptr(),
                      maxBlocksF,
                      seqPtr.ptr(),
                      posPtr.ptr(),
                      0,
                      t,
                      heads,
                      dim,
                      blockSize,
                      scale,
                      headScale,
                      DsaLaunchShapes.scoreBlocks(t, maxLen, 132));
              if (v >= 2) {
                k.dsa()
                    .topKCandidates(
                        s.stream(),
                        sel.ptr(),
                        topK,
                        scores.ptr(),
                        ld,
                        posPtr.ptr(),
                        0,
                        t,
                        state.ptr(),
                        chunks);
              } else if (fast) {
                k.dsa()
                    .topKMulti(
                        s.stream(),
                        sel.ptr(),
                        topK,
                        scores.ptr(),
                        ld,
                        posPtr.ptr(),
                        0,
                        t,
                        state.ptr(),
                        chunks);
              } else {
                k.dsa().topK(s.stream(), sel.ptr(), topK, scores.ptr(), ld, posPtr.ptr(), 0, t);
              }
              gotScores[v] = s.read(scores, t * ld);
              gotSel[v] = s.readInts(sel, t * topK);
              try (MlaWorkspace ws = new MlaWorkspace(t, splits, mlaHeads, lora, ropeDim)) {
                ws.partialCtx.poison(s.stream());
                ws.ctx.poison(s.stream());
                DeviceBuffer out = s.poisoned((long) t * mlaHeads * vDim);
                k.dsa()
                    .sparseMlaAttention(
                        s.stream(),
                        ws,
                        out.ptr(),
                        mlaQPtr.ptr(),
                        kvBPtr.ptr(),
                        latentPtr.ptr(),
                        tablePtr.ptr(),
                        maxBlocksF,
                        seqPtr.ptr(),
                        posPtr.ptr(),
                        sel.ptr(),
                        topK,
                        t,
                        mlaHeads,
                        nope,
                        ropeDim,
                        vDim,
                        lora,
                        blockSize,
                        splits,
                        mlaScale);
                gotAttn[v] = s.read(out, t * mlaHeads * vDim);
              }
            }
          } finally {
            k.dsa().useIndexerTensorCores(true);
            k.dsa().useTopKHalfBins(KernelTuning.defaults().indexerTopkHalfBins());
            k.dsa().useTopKWideWrite(KernelTuning.defaults().indexerTopkWideWrite());
            k.mla().useMlaTensorCores(KernelTuning.defaults().mlaTensorCores());
          }
        });
    for (int v = 0; v < variants; v++) {
      checkVariant(
          names[v],
          gotScores[v],
          gotSel[v],
          gotAttn[v],
          r.seed(),
          q,
          w,
          keys,
          latents,
          tokenSeq,
          tokenPos,
          heads,
          dim,
          topK,
          ld,
          scale,
          headScale,
          mlaQ,
          kvB,
          mlaHeads,
          nope,
          ropeDim,
          vDim,
          lora,
          mlaScale);
    }
  }

  /** One variant's scores, selections and sparse attention against the references. */
  private static void checkVariant(
      String variant,
      float[] gotScores,
      int[] gotSel,
      float[] gotAttn,
      long seed,
      float[] q,
      float[] w,
      float[][][] keys,
      float[][][] latents,
      int[] tokenSeq,
      int[] tokenPos,
      int heads,
      int dim,
      int topK,
      int ld,
      float scale,
      float headScale,
      float[] mlaQ,
      Rand.Bf16 kvB,
      int mlaHeads,
      int nope,
      int ropeDim,
      int vDim,
      int lora,
      float mlaScale) {
    int t = tokenSeq.length;
    float[][][] selectedRows = new float[t][][];
    for (int i = 0; i < t; i++) {
      int len = tokenPos[i] + 1;
      float[] want = scores(q, w, keys[tokenSeq[i]], i, len, heads, dim, scale, headScale);
      float[] got = Arrays.copyOfRange(gotScores, i * ld, i * ld + len);
      Compare.assertClose(
          variant + ": scores of query " + i + " (context " + len + ", seed " + seed + ")",
          got,
          want,
          1e-4);
      // The selection is checked on the GPU's own scores: the tie rule decides exactly there.
      int[] wantSel = topK(got, topK);
      int[] sel = Arrays.copyOfRange(gotSel, i * topK, (i + 1) * topK);
      int count = Math.min(len, topK);
      assertThat(Arrays.copyOf(sel, count))
          .as(
              "%s: selection of query %d (context %d, topK %d, seed %d)",
              variant, i, len, topK, seed)
          .containsExactly(wantSel);
      for (int j = count; j < topK; j++) {
        assertThat(sel[j]).as("%s: unused entry %d of query %d", variant, j, i).isEqualTo(-1);
      }
      selectedRows[i] = new float[count][];
      for (int j = 0; j < count; j++) {
        selectedRows[i][j] = latents[tokenSeq[i]][wantSel[j]];
      }
    }
    // Sparse attention = dense attention over the selected rows alone (query i as sequence i).
    int[] ownSeq = new int[t];
    int[] lastPos = new int[t];
    for (int i = 0; i < t; i++) {
      ownSeq[i] = i;
      lastPos[i] = selectedRows[i].length - 1;
    }
    float[] wantAttn =
        MlaGpuTest.reference(
            mlaQ,
            kvB.values(),
            selectedRows,
            ownSeq,
            lastPos,
            mlaHeads,
            nope,
            ropeDim,
            vDim,
            lora,
            mlaScale);
    // The CUDA-core kernel attends in f32 (1e-4); the tensor-core one takes bf16 queries as the
    // dense tensor-core MLA kernels do (MlaGpuTest's 1e-2; 1.0e-3 to 1.9e-3 measured on an H200).
    double tol = variant.startsWith("tensor cores") ? 1e-2 : 1e-4;
    Compare.assertClose(
        variant + ": sparse MLA attention (seed " + seed + ")", gotAttn, wantAttn, tol);
  }

  /** The CPU indexer's score of query {@code i} against positions {@code 0 .. len-1}. */
  private static float[] scores(
      float[] q,
      float[] w,
      float[][] keys,
      int i,
      int len,
      int heads,
      int dim,
      float scale,
      float headScale) {
    float[] out = new float[len];
    for (int p = 0; p < len; p++) {
      float sum = 0;
      for (int h = 0; h < heads; h++) {
        float dot = 0;
        for (int c = 0; c < dim; c++) {
          dot += q[(i * heads + h) * dim + c] * keys[p][c];
        }
        sum += w[i * heads + h] * headScale * Math.max(dot * scale, 0f);
      }
      out[p] = sum;
    }
    return out;
  }

  /**
   * The CPU's rule: the k highest scores, ties to the earlier position, ascending; all if fewer.
   */
  private static int[] topK(float[] scores, int k) {
    int n = scores.length;
    if (n <= k) {
      int[] all = new int[n];
      Arrays.setAll(all, p -> p);
      return all;
    }
    Integer[] order = new Integer[n];
    Arrays.setAll(order, p -> p);
    Arrays.sort(
        order,
        (a, b) -> {
          int c = Float.compare(scores[b] + 0f, scores[a] + 0f);
          return c != 0 ? c : Integer.compare(a, b);
        });
    int[] out = new int[k];
    for (int j = 0; j < k; j++) {
      out[j] = order[j];
    }
    Arrays.sort(out);
    return out;
  }
}
