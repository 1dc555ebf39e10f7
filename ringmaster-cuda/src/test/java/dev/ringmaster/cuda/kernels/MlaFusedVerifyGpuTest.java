package dev.ringmaster.cuda.kernels;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.arch.RopeTable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The fused MLA decode launch over a verify pass's rows: several new tokens of one sequence at
 * consecutive positions in one step, each attending causally up to its own position, their cache
 * rows appended in the same step. Three ways, on the same inputs: the separate kernels ({@link
 * MlaKernels#mlaKvRopeAppend} for every new row, then {@link MlaKernels#mlaAttention} on CUDA
 * cores: the unfused path a verify pass took before); the fused launch reading every row from the
 * cache after that append (within 2e-4 of the separate kernels: both are f32, each within 1e-4 of
 * an f64 reference in MlaGpuTest); and the fused launch appending the rows itself ({@link
 * MlaFusedDecode.Append}), every block building the step's rows of its sequence that it reads
 * (within 5e-4 of the fused launch without appending: its rows' latent norms sum in another order
 * and round to bf16 alike or one unit apart; a row read from the cache before another block wrote
 * it would read the poisoned cache), its cache rows within bf16 rounding (1e-2) of the separate
 * append. Steps: one sequence with 5 new rows (a batch-1 verify of 4 drafts), 5 sequences with one
 * each, runs that straddle two of the 8 splits, a sequence whose every position is new, runs of up
 * to {@link MlaFusedDecode#MAX_APPEND_ROWS}, and mixes of these.
 */
@Tag("gpu")
class MlaFusedVerifyGpuTest {
  @ParameterizedTest
  @CsvSource({
    // heads, nope, rope, v, blockSize, per sequence "length after the step + new tokens", rope
    // type, interleaved
    "16,128,64,128,64,100+5,yarn,true",
    "16,128,64,128,64,9+1;100+1;700+1;2+1;40+1,yarn,true",
    "16,128,64,128,16,20+8;5+5;300+3;1+1,default,false",
    "16,128,64,128,64,700+5;64+2,yarn,true",
    "4,192,64,256,16,33+2;17+7,default,false",
    "3,64,32,64,16,130+6,yarn,false"
  })
  void verifyRowsThroughTheFusedLaunchEqualTheSeparateKernels(
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int blockSize,
      String sequences,
      String ropeType,
      boolean interleaved) {
    Rand r = new Rand();
    int lora = 512;
    int d = lora + ropeDim;
    int qk = nope + ropeDim;
    int kvStride = d + 8;
    String[] parts = sequences.split(";");
    int seqs = parts.length;
    int[] lens = new int[seqs];
    int[] news = new int[seqs];
    for (int s = 0; s < seqs; s++) {
      String[] ln = parts[s].split("\\+");
      lens[s] = Integer.parseInt(ln[0]);
      news[s] = Integer.parseInt(ln[1]);
    }
    int maxBlocks = 0;
    int totalBlocks = 0;
    int t = 0;
    for (int s = 0; s < seqs; s++) {
      maxBlocks = Math.max(maxBlocks, (lens[s] + blockSize - 1) / blockSize);
      totalBlocks += (lens[s] + blockSize - 1) / blockSize;
      t += news[s];
    }
    int pool = totalBlocks + 2;
    List<Integer> free = new ArrayList<>();
    for (int b = 0; b < pool; b++) {
      free.add(b);
    }
    Collections.shuffle(free, new java.util.Random(r.seed()));
    int[] table = new int[seqs * maxBlocks];
    int next = 0;
    List<Integer> oldSlots = new ArrayList<>();
    int[] slots = new int[t];
    int[] pos = new int[t];
    int[] seq = new int[t];
    int at = 0;
    for (int s = 0; s < seqs; s++) {
      for (int b = 0; b < (lens[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
      for (int p = 0; p < lens[s]; p++) {
        int slot = table[s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
        if (p < lens[s] - news[s]) {
          oldSlots.add(slot);
        } else {
          slots[at] = slot;
          pos[at] = p;
          seq[at] = s;
          at++;
        }
      }
    }
    int cached = oldSlots.size();
    float[] old = r.uniform(Math.max(1, cached) * d, 1f);
    float[] kv = r.uniform(t * kvStride, 2f);
    float[] q = r.uniform(t * heads * qk, 1f);
    float[] norm = r.uniform(lora, 1f);
    Rand.Bf16 kvB = r.bf16(heads * (nope + vDim) * lora, 0.1f);
    RopeTable rope = new RopeTable(ElementwiseGpuTest.rope(ropeType, interleaved), ropeDim);
    float scale = (float) (1.0 / Math.sqrt(qk));
    String seed = sequences + ", seed " + r.seed();
    int maxBlocksF = maxBlocks;
    int tokens = t;
    Gpu.run(
        s -> {
          RingmasterKernels k = Gpu.kernels();
          long tableP = s.i32(table).ptr();
          long seqP = s.i32(seq).ptr();
          long posP = s.i32(pos).ptr();
          long slotP = s.i32(slots).ptr();
          long freqP = s.f32(rope.inverseFrequencies()).ptr();
          long normP = s.f32(norm).ptr();
          long kvBP = s.bf16(kvB.bits()).ptr();
          DeviceBuffer[] caches = new DeviceBuffer[2];
          for (int c = 0; c < 2; c++) {
            caches[c] = s.alloc(2L * pool * blockSize * d);
            caches[c].poison(s.stream());
            if (cached > 0) {
              int[] o = oldSlots.stream().mapToInt(Integer::intValue).toArray();
              k.mla()
                  .mlaCacheAppend(
                      s.stream(), caches[c].ptr(), s.f32(old).ptr(), d, s.i32(o).ptr(), cached, d);
            }
          }
          // The separate append of every new row (rotating q in place), then the split kernels.
          DeviceBuffer qA = s.f32(q);
          k.mla()
              .mlaKvRopeAppend(
                  s.stream(),
                  s.f32(kv).ptr(),
                  kvStride,
                  normP,
                  1e-6f,
                  lora,
                  ropeDim,
                  qA.ptr(),
                  heads * qk,
                  heads,
                  qk,
                  nope,
                  posP,
                  freqP,
                  rope.attentionScaling(),
                  rope.interleaved(),
                  caches[0].ptr(),
                  slotP,
                  tokens);
          int outLen = tokens * heads * vDim;
          DeviceBuffer separate = s.poisoned(outLen);
          k.mla().useMlaTensorCores(false);
          try (MlaWorkspace ws = new MlaWorkspace(tokens, 4, heads, lora, ropeDim)) {
            k.mla()
                .mlaAttention(
                    s.stream(),
                    ws,
                    separate.ptr(),
                    qA.ptr(),
                    kvBP,
                    caches[0].ptr(),
                    tableP,
                    maxBlocksF,
                    seqP,
                    posP,
                    tokens,
                    heads,
                    nope,
                    ropeDim,
                    vDim,
                    lora,
                    blockSize,
                    4,
                    scale);
          } finally {
            k.mla().useMlaTensorCores(true);
          }
          // The fused launch reading every row from the cache.
          DeviceBuffer fromCache = s.poisoned(outLen);
          k.mlaFusedDecode()
              .attention(
                  s.stream(),
                  fromCache.ptr(),
                  qA.ptr(),
                  kvBP,
                  caches[0].ptr(),
                  tableP,
                  maxBlocksF,
                  seqP,
                  posP,
                  tokens,
                  heads,
                  nope,
                  ropeDim,
                  vDim,
                  lora,
                  blockSize,
                  scale,
                  null);
          // The fused launch appending the rows itself, from kv's raw rows and q's raw rotary part.
          DeviceBuffer appending = s.poisoned(outLen);
          k.mlaFusedDecode()
              .attention(
                  s.stream(),
                  appending.ptr(),
                  s.f32(q).ptr(),
                  kvBP,
                  caches[1].ptr(),
                  tableP,
                  maxBlocksF,
                  seqP,
                  posP,
                  tokens,
                  heads,
                  nope,
                  ropeDim,
                  vDim,
                  lora,
                  blockSize,
                  scale,
                  new MlaFusedDecode.Append(
                      s.f32(kv).ptr(),
                      kvStride,
                      normP,
                      1e-6f,
                      freqP,
                      rope.attentionScaling(),
                      rope.interleaved(),
                      slotP));
          float[] want = s.read(separate, outLen);
          float[] cachedFused = s.read(fromCache, outLen);
          Compare.assertClose(
              "fused from the cache vs the separate kernels, " + seed, cachedFused, want, 2e-4);
          Compare.assertClose(
              "fused appending vs fused from the cache, " + seed,
              s.read(appending, outLen),
              cachedFused,
              5e-4);
          for (int i = 0; i < tokens; i++) {
            Compare.assertClose(
                "appended row of token " + i + ", " + seed,
                floats(FusedDecodeOpsGpuTest.rowOf(caches[1], s, slots[i], d)),
                floats(FusedDecodeOpsGpuTest.rowOf(caches[0], s, slots[i], d)),
                1e-2);
          }
        });
  }

  private static float[] floats(short[] bf16) {
    float[] out = new float[bf16.length];
    for (int i = 0; i < bf16.length; i++) {
      out[i] = Numerics.bf16ToFloat(bf16[i]);
    }
    return out;
  }
}
