package dev.ringmaster.cuda.kernels;

import dev.ringmaster.backend.cpu.Numerics;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.DeviceScope;
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
 * The fused MLA decode launch appending the step's own cache rows ({@link MlaFusedDecode.Append})
 * against {@link MlaKernels#mlaKvRopeAppend} followed by the fused launch without appending: the
 * attention output within 1e-4 (the latent's norm sums its squares in another order) and the
 * appended cache rows within bf16 rounding (1e-2). One new token per sequence, at positions whose
 * row lands in the first, a middle and the last of the 8 splits (lengths 1, 2, 9, 100, 700), the
 * other positions already cached in shuffled blocks.
 */
@Tag("gpu")
class MlaFusedAppendGpuTest {
  @ParameterizedTest
  @CsvSource({
    // heads, nope, rope, v, blockSize, sequence lengths with the new token, rope type, interleaved
    "16,128,64,128,64,1;9;100;700,yarn,true",
    "4,192,64,256,16,2;33,default,false",
    "3,64,32,64,16,17,yarn,false"
  })
  void appendingEqualsTheSeparateAppend(
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int blockSize,
      String lengths,
      String ropeType,
      boolean interleaved) {
    Rand r = new Rand();
    int lora = 512;
    int d = lora + ropeDim;
    int qk = nope + ropeDim;
    int kvStride = d + 8;
    int[] lens = java.util.Arrays.stream(lengths.split(";")).mapToInt(Integer::parseInt).toArray();
    int t = lens.length;
    int maxBlocks =
        java.util.Arrays.stream(lens).map(l -> (l + blockSize - 1) / blockSize).max().orElse(1);
    int totalBlocks = java.util.Arrays.stream(lens).map(l -> (l + blockSize - 1) / blockSize).sum();
    int pool = totalBlocks + 2;
    List<Integer> free = new ArrayList<>();
    for (int b = 0; b < pool; b++) {
      free.add(b);
    }
    Collections.shuffle(free, new java.util.Random(r.seed()));
    int[] table = new int[t * maxBlocks];
    int next = 0;
    List<Integer> oldSlots = new ArrayList<>();
    int[] slots = new int[t];
    int[] pos = new int[t];
    int[] seq = new int[t];
    for (int s = 0; s < t; s++) {
      for (int b = 0; b < (lens[s] + blockSize - 1) / blockSize; b++) {
        table[s * maxBlocks + b] = free.get(next++);
      }
      for (int p = 0; p < lens[s]; p++) {
        int slot = table[s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
        if (p < lens[s] - 1) {
          oldSlots.add(slot);
        } else {
          slots[s] = slot;
        }
      }
      pos[s] = lens[s] - 1;
      seq[s] = s;
    }
    int cached = oldSlots.size();
    float[] old = r.uniform(Math.max(1, cached) * d, 1f);
    float[] kv = r.uniform(t * kvStride, 2f);
    float[] q = r.uniform(t * heads * qk, 1f);
    float[] norm = r.uniform(lora, 1f);
    Rand.Bf16 kvB = r.bf16(heads * (nope + vDim) * lora, 0.1f);
    RopeTable rope = new RopeTable(ElementwiseGpuTest.rope(ropeType, interleaved), ropeDim);
    float scale = (float) (1.0 / Math.sqrt(qk));
    String seed = "seed " + r.seed();
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
          // The separate append, then the fused attention reading every row from the cache.
          DeviceBuffer kvA = s.f32(kv);
          DeviceBuffer qA = s.f32(q);
          k.mla()
              .mlaKvRopeAppend(
                  s.stream(),
                  kvA.ptr(),
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
                  t);
          DeviceBuffer want = s.poisoned((long) t * heads * vDim);
          attend(
              k, s, want, qA.ptr(), kvBP, caches[0], tableP, maxBlocks, seqP, posP, t, heads, nope,
              ropeDim, vDim, blockSize, scale, null);
          // The fused attention appending the rows itself from kv's raw rows and q's raw rotary
          // part.
          DeviceBuffer got = s.poisoned((long) t * heads * vDim);
          MlaFusedDecode.Append append =
              new MlaFusedDecode.Append(
                  s.f32(kv).ptr(),
                  kvStride,
                  normP,
                  1e-6f,
                  freqP,
                  rope.attentionScaling(),
                  rope.interleaved(),
                  slotP);
          attend(
              k,
              s,
              got,
              s.f32(q).ptr(),
              kvBP,
              caches[1],
              tableP,
              maxBlocks,
              seqP,
              posP,
              t,
              heads,
              nope,
              ropeDim,
              vDim,
              blockSize,
              scale,
              append);
          Compare.assertClose(
              "fused appending vs separate append " + seed,
              s.read(got, t * heads * vDim),
              s.read(want, t * heads * vDim),
              1e-4);
          for (int i = 0; i < t; i++) {
            Compare.assertClose(
                "appended row of token " + i + ", " + seed,
                floats(FusedDecodeOpsGpuTest.rowOf(caches[1], s, slots[i], d)),
                floats(FusedDecodeOpsGpuTest.rowOf(caches[0], s, slots[i], d)),
                1e-2);
          }
        });
  }

  private static void attend(
      RingmasterKernels k,
      DeviceScope s,
      DeviceBuffer out,
      long q,
      long kvB,
      DeviceBuffer cache,
      long table,
      int maxBlocks,
      long seq,
      long pos,
      int t,
      int heads,
      int nope,
      int ropeDim,
      int vDim,
      int blockSize,
      float scale,
      MlaFusedDecode.Append append) {
    k.mlaFusedDecode()
        .attention(
            s.stream(),
            out.ptr(),
            q,
            kvB,
            cache.ptr(),
            table,
            maxBlocks,
            seq,
            pos,
            t,
            heads,
            nope,
            ropeDim,
            vDim,
            512,
            blockSize,
            scale,
            append);
  }

  private static float[] floats(short[] bf16) {
    float[] out = new float[bf16.length];
    for (int i = 0; i < bf16.length; i++) {
      out[i] = Numerics.bf16ToFloat(bf16[i]);
    }
    return out;
  }
}
