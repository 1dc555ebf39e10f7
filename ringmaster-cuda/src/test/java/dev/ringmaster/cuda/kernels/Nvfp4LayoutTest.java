package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringmaster.backend.quant.E2m1;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The NVFP4 device nibble order and the kernels' f16 decoding of it, on the CPU. */
class Nvfp4LayoutTest {
  private static final ValueLayout.OfInt I32_LE =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** Code of element {@code j} (0..7) of a checkpoint-order word. */
  private static int stored(int word, int j) {
    return (word >>> (4 * j)) & 0xf;
  }

  @Test
  void deviceOrderPutsElementsTwoPAndTwoPPlusOneInSlotsPAndPPlusFour() {
    int stored = 0x76543210; // element j has code j
    int device = Nvfp4Layout.toDeviceWord(stored);
    assertThat(device).isEqualTo(0x75316420);
    assertThat(Nvfp4Layout.toStoredWord(device)).isEqualTo(stored);
    SplittableRandom r = new SplittableRandom(7);
    for (int i = 0; i < 10_000; i++) {
      int w = r.nextInt();
      int d = Nvfp4Layout.toDeviceWord(w);
      assertThat(Nvfp4Layout.toStoredWord(d)).isEqualTo(w);
      for (int p = 0; p < 4; p++) {
        assertThat((d >>> (4 * p)) & 0xf).isEqualTo(stored(w, 2 * p));
        assertThat((d >>> (4 * p + 16)) & 0xf).isEqualTo(stored(w, 2 * p + 1));
      }
    }
  }

  @Test
  void f16PairsAreTheE2m1ValuesTimesTwoToTheMinus14ForEveryCodePair() {
    float scale = Math.scalb(1f, 14);
    for (int lo = 0; lo < 16; lo++) {
      for (int hi = 0; hi < 16; hi++) {
        for (int p = 0; p < 4; p++) {
          // elements 2p and 2p + 1 carry the pair, every other element the codes 0xf, 0x9
          int stored = 0;
          for (int j = 0; j < 8; j++) {
            int code = j == 2 * p ? lo : j == 2 * p + 1 ? hi : (j % 2 == 0 ? 0xf : 0x9);
            stored |= code << (4 * j);
          }
          int bits = Nvfp4Layout.f16PairBits(Nvfp4Layout.toDeviceWord(stored), p);
          float a = Float.float16ToFloat((short) (bits & 0xffff)) * scale;
          float b = Float.float16ToFloat((short) (bits >>> 16)) * scale;
          assertThat(Float.floatToRawIntBits(a))
              .as("code %d at element %d", lo, 2 * p)
              .isEqualTo(Float.floatToRawIntBits(E2m1.decode(lo)));
          assertThat(Float.floatToRawIntBits(b))
              .as("code %d at element %d", hi, 2 * p + 1)
              .isEqualTo(Float.floatToRawIntBits(E2m1.decode(hi)));
        }
      }
    }
  }

  @Test
  void rowsAreReorderedWordByWordInPlace() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment seg = arena.allocate(24);
      SplittableRandom r = new SplittableRandom(3);
      int[] words = new int[6];
      for (int i = 0; i < 6; i++) {
        words[i] = r.nextInt();
        seg.set(I32_LE, 4L * i, words[i]);
      }
      Nvfp4Layout.toDeviceOrder(seg, 8, 12); // words 2..4 only
      for (int i = 0; i < 6; i++) {
        int want = i >= 2 && i < 5 ? Nvfp4Layout.toDeviceWord(words[i]) : words[i];
        assertThat(seg.get(I32_LE, 4L * i)).as("word %d", i).isEqualTo(want);
      }
      assertThatThrownBy(() -> Nvfp4Layout.toDeviceOrder(seg, 0, 6))
          .hasMessageContaining("4-byte words");
    }
  }

  @Test
  void passSizeFollowsTheFp8Threshold() {
    // V2-Lite: 64 experts top-6: 8-token passes up to batch 64, 32-token ones beyond
    assertThat(Nvfp4Kernels.moeMmaPassTokens(64, 6, 64)).isEqualTo(8);
    assertThat(Nvfp4Kernels.moeMmaPassTokens(65, 6, 64)).isEqualTo(32);
    assertThat(Nvfp4Kernels.moeMmaPassTokens(512, 6, 64)).isEqualTo(32);
  }
}
