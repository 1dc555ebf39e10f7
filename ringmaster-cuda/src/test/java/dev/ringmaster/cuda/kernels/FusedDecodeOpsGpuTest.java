package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.cpu.CpuOps;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.model.arch.RopeTable;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The fused launches of a decode step against the kernels they replace (bit for bit where the
 * arithmetic is the same sum, else within float rounding) and against the CPU: two GEMVs in one
 * launch, the SwiGLU gate|up GEMV, and MLA's norm + rotary + cache append.
 */
@Tag("gpu")
class FusedDecodeOpsGpuTest {
  @ParameterizedTest
  @CsvSource({"3072,576,2048,1", "37,5,72,3", "1536,576,7168,2", "8,9,100,5"})
  void twoGemvsInOneLaunchEqualTwoLaunches(int m1, int m2, int k, int n) {
    Rand r = new Rand();
    Rand.Bf16 w1 = r.bf16(m1 * k, 0.5f);
    Rand.Bf16 w2 = r.bf16(m2 * k, 0.5f);
    float[] x = r.uniform(n * k, 1f);
    Gpu.run(
        s -> {
          var kk = Gpu.kernels();
          long xp = s.f32(x).ptr();
          long w1p = s.bf16(w1.bits()).ptr();
          long w2p = s.bf16(w2.bits()).ptr();
          DeviceBuffer a1 = s.poisoned((long) n * m1);
          DeviceBuffer a2 = s.poisoned((long) n * m2);
          DeviceBuffer b1 = s.poisoned((long) n * m1);
          DeviceBuffer b2 = s.poisoned((long) n * m2);
          kk.gemv(s.stream(), a1.ptr(), w1p, xp, m1, k, n);
          kk.gemv(s.stream(), a2.ptr(), w2p, xp, m2, k, n);
          kk.gemv2(s.stream(), b1.ptr(), w1p, m1, b2.ptr(), w2p, m2, xp, k, n);
          String seed = "seed " + r.seed();
          assertThat(s.read(b1, n * m1)).as(seed).containsExactly(s.read(a1, n * m1));
          assertThat(s.read(b2, n * m2)).as(seed).containsExactly(s.read(a2, n * m2));
          Compare.assertClose(
              "gemv2 y1 " + seed,
              s.read(b1, n * m1),
              GemvGpuTest.reference(w1.values(), x, m1, k, n),
              1e-5);
        });
  }

  @ParameterizedTest
  @CsvSource({"1408,2048,1", "2816,2048,2", "7,72,4", "100,264,3", "1024,7168,1"})
  void swigluGemvEqualsGemvThenSiluMul(int inter, int k, int n) {
    Rand r = new Rand();
    Rand.Bf16 w = r.bf16(2 * inter * k, 0.5f);
    float[] x = r.uniform(n * k, 1f);
    float[] gateUp = GemvGpuTest.reference(w.values(), x, 2 * inter, k, n);
    float[] want = new float[n * inter];
    for (int t = 0; t < n; t++) {
      for (int j = 0; j < inter; j++) {
        double g = gateUp[t * 2 * inter + j];
        want[t * inter + j] = (float) (g / (1 + Math.exp(-g)) * gateUp[t * 2 * inter + inter + j]);
      }
    }
    Gpu.run(
        s -> {
          var kk = Gpu.kernels();
          long xp = s.f32(x).ptr();
          long wp = s.bf16(w.bits()).ptr();
          DeviceBuffer gu = s.poisoned((long) n * 2 * inter);
          DeviceBuffer separate = s.poisoned((long) n * inter);
          DeviceBuffer fused = s.poisoned((long) n * inter);
          // The SwiGLU GEMV repeats the one-warp-per-row GEMV's sums.
          GemvVariantsGpuTest.withOneWarpPerRow(
              kk, () -> kk.gemv(s.stream(), gu.ptr(), wp, xp, 2 * inter, k, n));
          kk.siluMul(
              s.stream(), separate.ptr(), inter, gu.ptr(), gu.ptr(4L * inter), 2 * inter, n, inter);
          kk.gemvSwiglu(s.stream(), fused.ptr(), wp, xp, inter, k, n);
          String seed = "seed " + r.seed();
          float[] got = s.read(fused, n * inter);
          assertThat(got).as(seed).containsExactly(s.read(separate, n * inter));
          Compare.assertClose("swiglu gemv " + seed, got, want, 1e-4);
        });
  }

  @ParameterizedTest
  @CsvSource({
    // heads, nope, rope, kvLora, tokens, rope type, interleaved
    "16,128,64,512,1,yarn,true",
    "16,128,64,512,7,default,true",
    "64,192,64,512,3,yarn,true",
    "3,24,16,100,5,default,false",
    "9,32,32,64,2,default,true"
  })
  void mlaNormRopeAppendEqualsTheSeparateKernels(
      int heads, int nope, int ropeDim, int kvLora, int n, String ropeType, boolean interleaved) {
    Rand r = new Rand();
    RopeTable table = new RopeTable(ElementwiseGpuTest.rope(ropeType, interleaved), ropeDim);
    int qk = nope + ropeDim;
    int d = kvLora + ropeDim;
    int kvStride = d + 4; // rows wider than the latent and key, as a padded projection leaves them
    float[] kv = r.uniform(n * kvStride, 3f);
    float[] q = r.uniform(n * heads * qk, 2f);
    float[] norm = r.uniform(kvLora, 1f);
    int[] pos = new int[n];
    int blockSize = 16;
    // 7 and the pool size coprime, so t -> 7t + 3 (mod pool) gives distinct rows out of order (a
    // pool of n + 5 rows gave both tokens of n = 2 row 3: whichever block wrote last won, in
    // either cache).
    int pool = 7 * n + 5;
    int[] slots = new int[n];
    for (int t = 0; t < n; t++) {
      pos[t] = r.nextInt(50_000);
      slots[t] = (t * 7 + 3) % pool;
    }
    assertThat(java.util.Arrays.stream(slots).distinct().count()).as("distinct slots").isEqualTo(n);
    // CPU: the latent normalised, the key and each head's rotary query rotated.
    float[] wantKv = kv.clone();
    float[] wantQ = q.clone();
    float[] scratch = new float[ropeDim];
    CpuOps.rmsNorm(wantKv, 0, n, kvLora, kvStride, norm, 1e-6);
    for (int t = 0; t < n; t++) {
      table.rotate(wantKv, t * kvStride + kvLora, pos[t], scratch);
      for (int h = 0; h < heads; h++) {
        table.rotate(wantQ, (t * heads + h) * qk + nope, pos[t], scratch);
      }
    }
    Gpu.run(
        s -> {
          var kk = Gpu.kernels();
          long posP = s.i32(pos).ptr();
          long slotP = s.i32(slots).ptr();
          long freqP = s.f32(table.inverseFrequencies()).ptr();
          long normP = s.f32(norm).ptr();
          // separate kernels
          DeviceBuffer kvA = s.f32(kv);
          DeviceBuffer qA = s.f32(q);
          DeviceBuffer cacheA = s.alloc(2L * pool * blockSize * d);
          cacheA.poison(s.stream());
          kk.rmsNorm(
              s.stream(), kvA.ptr(), kvStride, 0, 0, kvA.ptr(), kvStride, normP, n, kvLora, 1e-6f);
          kk.rope(
              s.stream(),
              kvA.ptr(),
              kvStride,
              0,
              kvLora,
              posP,
              freqP,
              n,
              1,
              ropeDim,
              table.attentionScaling(),
              table.interleaved());
          kk.rope(
              s.stream(),
              qA.ptr(),
              heads * qk,
              qk,
              nope,
              posP,
              freqP,
              n,
              heads,
              ropeDim,
              table.attentionScaling(),
              table.interleaved());
          kk.mla().mlaCacheAppend(s.stream(), cacheA.ptr(), kvA.ptr(), kvStride, slotP, n, d);
          // fused
          DeviceBuffer kvB = s.f32(kv);
          DeviceBuffer qB = s.f32(q);
          DeviceBuffer cacheB = s.alloc(2L * pool * blockSize * d);
          cacheB.poison(s.stream());
          kk.mla()
              .mlaKvRopeAppend(
                  s.stream(),
                  kvB.ptr(),
                  kvStride,
                  normP,
                  1e-6f,
                  kvLora,
                  ropeDim,
                  qB.ptr(),
                  heads * qk,
                  heads,
                  qk,
                  nope,
                  posP,
                  freqP,
                  table.attentionScaling(),
                  table.interleaved(),
                  cacheB.ptr(),
                  slotP,
                  n);
          String seed = "seed " + r.seed();
          float[] gotQ = s.read(qB, q.length);
          // The same rotation expression; the compiler may contract it into FMAs differently.
          Compare.assertClose("q vs rm_rope " + seed, gotQ, s.read(qA, q.length), 1e-6);
          Compare.assertClose("q vs CPU " + seed, gotQ, wantQ, 1e-5);
          float[] gotKv = s.read(kvB, kv.length);
          Compare.assertClose(
              "kv vs separate kernels " + seed, gotKv, s.read(kvA, kv.length), 1e-6);
          Compare.assertClose("kv vs CPU " + seed, gotKv, wantKv, 1e-5);
          for (int t = 0; t < n; t++) {
            short[] a = rowOf(cacheA, s, slots[t], d);
            short[] b = rowOf(cacheB, s, slots[t], d);
            for (int i = 0; i < d; i++) {
              // bf16 of values equal to ~1e-6: one bf16 unit apart at most, or both within ~1e-6
              // of zero (there a unit is tiny, and bit patterns of a sign change are far apart).
              float fa = Float.intBitsToFloat(a[i] << 16);
              float fb = Float.intBitsToFloat(b[i] << 16);
              assertThat((double) Math.abs(fa - fb))
                  .as("cache row %d dim %d, %s", t, i, seed)
                  .isLessThanOrEqualTo(Math.max(Math.abs(fa), Math.abs(fb)) * 0x1p-7 + 2e-6);
            }
          }
        });
  }

  static short[] rowOf(
      DeviceBuffer cache, dev.ringmaster.cuda.testing.DeviceScope s, int slot, int d) {
    short[] all = cache.downloadShorts(s.stream(), (slot + 1) * d);
    return java.util.Arrays.copyOfRange(all, slot * d, (slot + 1) * d);
  }
}
