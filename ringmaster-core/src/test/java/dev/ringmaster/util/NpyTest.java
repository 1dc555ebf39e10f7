package dev.ringmaster.util;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpyTest {
  /** {@code np.lib.format.write_array(f, a, version=V)} of a 2x3 float32 array (numpy 2.4). */
  private static final String NUMPY_V1 =
      "k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDMpLCB9"
          + "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAIC/AAAAvwAA"
          + "AAAAAAA/AACAPwAAwD8=";

  private static final String NUMPY_V2 =
      "k05VTVBZAgB0AAAAeydkZXNjcic6ICc8ZjQnLCAnZm9ydHJhbl9vcmRlcic6IEZhbHNlLCAnc2hhcGUnOiAoMiwgMyks"
          + "IH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAIC/AAAAvwAA"
          + "AAAAAAA/AACAPwAAwD8=";

  private static final float[] NUMPY_DATA = {-1f, -0.5f, 0f, 0.5f, 1f, 1.5f};

  @Test
  void headerBytesFollowTheSpec() {
    byte[] p = Npy.preamble(3, 5);
    String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
    assertThat(p).hasSize(128); // 10 fixed bytes + 118 of header: the next multiple of 64
    assertThat(java.util.Arrays.copyOfRange(p, 0, 10))
        .containsExactly(0x93 - 256, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0);
    String header = new String(p, 10, 118, StandardCharsets.US_ASCII);
    assertThat(header).isEqualTo(dict + " ".repeat(118 - dict.length() - 1) + "\n");
  }

  @Test
  void preambleIsAlwaysAMultipleOf64AndEndsInNewline() {
    for (int[] s :
        new int[][] {{0, 0}, {1, 1}, {7, 129280}, {123456, 151936}, {Integer.MAX_VALUE, 2}}) {
      byte[] p = Npy.preamble(s[0], s[1]);
      assertThat(p.length % 64).isZero();
      assertThat(p[p.length - 1]).isEqualTo((byte) '\n');
      int headerLen = (p[8] & 0xff) | (p[9] & 0xff) << 8;
      assertThat(10 + headerLen).isEqualTo(p.length);
    }
  }

  @Test
  void roundTrips(@TempDir Path tmp) throws IOException {
    float[] a = {1.5f, -2f, Float.MIN_VALUE, Float.MAX_VALUE, -0f, 3.25e-7f};
    float[] b = {0f, 1f, 2f, Float.NEGATIVE_INFINITY, 7f, 8f};
    Npy.Matrix m = Npy.Matrix.ofRows(6, List.of(a, b));
    Path f = tmp.resolve("x.npy");
    Npy.write(f, m);
    assertThat(Files.size(f)).isEqualTo(128 + 2 * 6 * 4);
    Npy.Matrix back = Npy.read(f);
    assertThat(back.rows()).isEqualTo(2);
    assertThat(back.cols()).isEqualTo(6);
    assertThat(back.data()).containsExactly(m.data());
    assertThat(Float.floatToRawIntBits(back.get(0, 4))).isEqualTo(Float.floatToRawIntBits(-0f));

    Npy.write(f, new Npy.Matrix(0, 5, new float[0]));
    assertThat(Npy.read(f).shape()).isEqualTo("(0, 5)");
  }

  @Test
  void readsWhatNumpyWrites(@TempDir Path tmp) throws IOException {
    for (String b64 : new String[] {NUMPY_V1, NUMPY_V2}) {
      Path f = tmp.resolve("np.npy");
      Files.write(f, Base64.getDecoder().decode(b64));
      Npy.Matrix m = Npy.read(f);
      assertThat(m.shape()).isEqualTo("(2, 3)");
      assertThat(m.data()).containsExactly(NUMPY_DATA);
    }
  }

  /** Byte for byte: numpy's growth padding happens to end at the same multiple of 64 here. */
  @Test
  void writesWhatNumpyWritesForTheSameArray(@TempDir Path tmp) throws IOException {
    Path f = tmp.resolve("x.npy");
    Npy.write(f, new Npy.Matrix(2, 3, NUMPY_DATA));
    assertThat(Files.readAllBytes(f)).isEqualTo(Base64.getDecoder().decode(NUMPY_V1));
  }

  @Test
  void rejectsWhatItCannotRead(@TempDir Path tmp) throws IOException {
    Path f = tmp.resolve("bad.npy");
    Files.writeString(f, "not numpy at all");
    assertThatThrownBy(() -> Npy.read(f))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("magic");

    byte[] good = Base64.getDecoder().decode(NUMPY_V1);
    Files.write(
        f,
        new String(good, StandardCharsets.ISO_8859_1)
            .replace("<f4", "<f8")
            .getBytes(StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> Npy.read(f)).hasMessageContaining("'<f8'");

    Files.write(
        f,
        new String(good, StandardCharsets.ISO_8859_1)
            .replace("(2, 3)", "(6,)  ")
            .getBytes(StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> Npy.read(f)).hasMessageContaining("not 2-D");

    Files.write(f, java.util.Arrays.copyOf(good, good.length - 4));
    assertThatThrownBy(() -> Npy.read(f)).hasMessageContaining("truncated");

    Files.write(
        f,
        new String(good, StandardCharsets.ISO_8859_1)
            .replace("False", "True ")
            .getBytes(StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> Npy.read(f)).hasMessageContaining("Fortran");
  }
}
