package dev.ringmaster.backend.quant;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** e4m3 and e2m1 codecs and the quantizers on hand-made values. */
class QuantCodecTest {
  @Test
  void e4m3DecodesEveryCodeAndEncodesItBack() {
    assertThat(Fp8E4m3.decode(0x7e)).isEqualTo(448f);
    assertThat(Fp8E4m3.decode(0x01)).isEqualTo(0x1p-9f);
    assertThat(Fp8E4m3.decode(0x08)).isEqualTo(0x1p-6f);
    assertThat(Fp8E4m3.decode(0x38)).isEqualTo(1f);
    assertThat(Fp8E4m3.decode(0xb8)).isEqualTo(-1f);
    assertThat(Fp8E4m3.decode(0x7f)).isNaN();
    assertThat(Fp8E4m3.decode(0xff)).isNaN();
    for (int b = 0; b < 256; b++) {
      if ((b & 0x7f) != 0x7f) {
        assertThat(Fp8E4m3.encode(Fp8E4m3.decode(b)) & 0xff).as("code %x", b).isEqualTo(b);
      }
    }
  }

  @Test
  void e4m3RoundsToNearestEvenAndSaturates() {
    assertThat(Fp8E4m3.encode(1.0625f)).isEqualTo((byte) 0x38); // halfway 1 .. 1.125: even
    assertThat(Fp8E4m3.encode(1.1875f)).isEqualTo((byte) 0x3a); // halfway 1.125 .. 1.25: even
    assertThat(Fp8E4m3.encode(1.07f)).isEqualTo((byte) 0x39);
    assertThat(Fp8E4m3.encode(1000f)).isEqualTo((byte) 0x7e);
    assertThat(Fp8E4m3.encode(-1000f)).isEqualTo((byte) 0xfe);
    assertThat(Fp8E4m3.encode(0x1p-10f)).isEqualTo((byte) 0x00); // half the smallest subnormal
    assertThat(Fp8E4m3.encode(0x1.8p-10f)).isEqualTo((byte) 0x01);
    assertThat(Fp8E4m3.encode(15.5f * 0x1p-10f)).isEqualTo((byte) 0x08); // rounds up to normal
  }

  @Test
  void e2m1RoundsTiesToEvenCodes() {
    float[] in = {0.25f, 0.3f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5f, 5.01f, -0.1f, -0f, -6f, 7f};
    int[] want = {0, 1, 2, 2, 4, 4, 6, 6, 7, 8, 0, 15, 7};
    for (int i = 0; i < in.length; i++) {
      assertThat(E2m1.encode(in[i])).as("e2m1(%s)", in[i]).isEqualTo(want[i]);
    }
    assertThat(E2m1.decode(8)).isEqualTo(-0f);
    assertThat(E2m1.decode(7)).isEqualTo(6f);
    assertThat(E2m1.decode(13)).isEqualTo(-3f);
  }

  @Test
  void fp8BlockScalesEachBlockByItsOwnMaximum() {
    int rows = 130;
    int cols = 3;
    float[] w = new float[rows * cols];
    w[0] = 2f; // block (0, 0)
    w[129 * cols + 1] = -0.5f; // the partial block row (1, 0)
    Quantizers.Fp8Block q = Quantizers.fp8Block(w, rows, cols);
    assertThat(q.scaleInv()).containsExactly(2f / 448f, 0.5f / 448f);
    assertThat(Fp8E4m3.decode(q.codes()[0]) * q.scaleInv()[0]).isEqualTo(2f);
    assertThat(Fp8E4m3.decode(q.codes()[129 * cols + 1]) * q.scaleInv()[1]).isEqualTo(-0.5f);
    assertThat(Quantizers.fp8Block(new float[4], 2, 2).scaleInv()).containsExactly(1f);
  }

  @Test
  void nvfp4PacksLowNibbleFirstAndScalesPerGroup() {
    float[] w = new float[32];
    w[0] = 6f; // group 0 max: scale 1 after the global scale
    w[1] = -3f;
    w[16] = 1.5f; // group 1 max
    Quantizers.Nvfp4 q = Quantizers.nvfp4(w, 1, 32, Quantizers.amax(w));
    assertThat(q.scale2()).isEqualTo(1f / (2688f / 6f));
    assertThat(q.packed()[0] & 0xf).isEqualTo(7); // 6
    assertThat((q.packed()[0] >>> 4) & 0xf).isEqualTo(13); // -3
    assertThat(Fp8E4m3.decode(q.scales()[0]) * q.scale2() * E2m1.decode(7)).isEqualTo(6f);
    assertThat(Fp8E4m3.decode(q.scales()[1]) * q.scale2() * E2m1.decode(q.packed()[8] & 0xf))
        .isEqualTo(1.5f);
  }
}
