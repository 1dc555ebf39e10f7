package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Compare;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * MLA's query absorption and latent output projection launched over ranges of a step's tokens (a
 * mixed step's decode rows, absorbed prompt runs) give every token of a range the bits that the
 * launch over the whole step gives it, and leave the rows outside the ranges as they were: the
 * model projects only those rows, and a token's output must not depend on which other tokens share
 * its step.
 */
@Tag("gpu")
class MlaProjectionRangesGpuTest {
  private static final int POISON_BITS = 0x7fc00000;

  @ParameterizedTest(name = "heads {0}, nope {1}, rope {2}, v {3}, lora {4}, ranges {6}")
  @CsvSource({
    // heads, nope, rope, v, lora, tokens, ranges (first:count, ;-separated)
    "16,128,64,128,512,83,0:64;64:1;70:3;82:1",
    "16,128,64,128,512,300,5:1;17:9;299:1",
    // latent width not a multiple of 8: the scalar weight paths
    "3,24,16,20,100,41,0:1;3:13;40:1",
    "4,64,32,64,512,9,1:7"
  })
  void rangesGiveTheWholeStepsBits(
      int heads, int nope, int ropeDim, int vDim, int lora, int tokens, String rangeSpec) {
    int[][] ranges =
        Arrays.stream(rangeSpec.split(";"))
            .map(r -> Arrays.stream(r.split(":")).mapToInt(Integer::parseInt).toArray())
            .toArray(int[][]::new);
    boolean[] inRange = new boolean[tokens];
    for (int[] r : ranges) {
      Arrays.fill(inRange, r[0], r[0] + r[1], true);
    }
    Rand r = new Rand();
    float[] q = r.uniform(tokens * heads * (nope + ropeDim), 1f);
    float[] ctx = r.uniform(tokens * heads * lora, 1f);
    Rand.Bf16 kvB = r.bf16(heads * (nope + vDim) * lora, 0.1f);
    int latentRow = heads * (lora + ropeDim);
    int outRow = heads * vDim;
    Gpu.run(
        s -> {
          var k = Gpu.kernels().mla();
          long qPtr = s.f32(q).ptr();
          long kvBPtr = s.bf16(kvB.bits()).ptr();
          try (MlaWorkspace ws = new MlaWorkspace(tokens, 1, heads, lora, ropeDim)) {
            ws.qLatent.poison(s.stream());
            k.mlaAbsorb(s.stream(), ws, qPtr, kvBPtr, tokens, heads, nope, ropeDim, vDim, lora);
            float[] wholeQ = ws.qLatent.downloadFloats(s.stream(), tokens * latentRow);
            ws.qLatent.poison(s.stream());
            for (int[] g : ranges) {
              k.mlaAbsorbRange(
                  s.stream(), ws, qPtr, kvBPtr, g[0], g[1], heads, nope, ropeDim, vDim, lora);
            }
            float[] rangedQ = ws.qLatent.downloadFloats(s.stream(), tokens * latentRow);
            expectRows("absorbed queries, seed " + r.seed(), wholeQ, rangedQ, inRange, latentRow);

            ws.ctx.upload(s.stream(), ctx);
            DeviceBuffer whole = s.poisoned((long) tokens * outRow);
            k.mlaOutV(s.stream(), ws, whole.ptr(), kvBPtr, tokens, heads, nope, vDim, lora);
            DeviceBuffer ranged = s.poisoned((long) tokens * outRow);
            for (int[] g : ranges) {
              k.mlaOutVRange(
                  s.stream(), ws, ranged.ptr(), kvBPtr, g[0], g[1], heads, nope, vDim, lora);
            }
            expectRows(
                "output projection, seed " + r.seed(),
                s.read(whole, tokens * outRow),
                s.read(ranged, tokens * outRow),
                inRange,
                outRow);
          }
        });
  }

  /** Rows in a range carry the whole launch's bits; the others still hold the poison. */
  private static void expectRows(
      String what, float[] whole, float[] ranged, boolean[] inRange, int rowWidth) {
    int[] wholeBits = Compare.bits(whole);
    int[] rangedBits = Compare.bits(ranged);
    for (int t = 0; t < inRange.length; t++) {
      int[] got = Arrays.copyOfRange(rangedBits, t * rowWidth, (t + 1) * rowWidth);
      if (inRange[t]) {
        int[] want = Arrays.copyOfRange(wholeBits, t * rowWidth, (t + 1) * rowWidth);
        assertThat(Arrays.stream(want).noneMatch(b -> b == POISON_BITS))
            .as("%s: token %d written by the whole launch", what, t)
            .isTrue();
        assertThat(got).as("%s: token %d", what, t).containsExactly(want);
      } else {
        assertThat(got).as("%s: token %d outside the ranges", what, t).containsOnly(POISON_BITS);
      }
    }
  }
}
