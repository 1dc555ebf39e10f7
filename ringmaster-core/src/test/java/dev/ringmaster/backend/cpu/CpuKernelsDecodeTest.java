package dev.ringmaster.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.backend.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The vectorised bf16 and f16 widening is exact for all 65,536 bit patterns (zeros, subnormals,
 * infinities and NaNs included), at every vector width, read from a misaligned segment.
 */
class CpuKernelsDecodeTest {
  @ParameterizedTest(name = "{0} at {1} bits")
  @CsvSource({"BF16,128", "BF16,256", "BF16,512", "F16,128", "F16,256", "F16,512"})
  void everyBitPatternWidensExactly(DType dtype, int bits) {
    int count = 1 << 16;
    try (Arena arena = Arena.ofConfined();
        CpuKernelContext kernels = new CpuKernelContext(bits, 1)) {
      MemorySegment data = arena.allocate(2L * count + 1).asSlice(1, 2L * count);
      for (int i = 0; i < count; i++) {
        data.set(Numerics.I16_LE, 2L * i, (short) i);
      }
      CpuMatrix row = new CpuMatrix(data, dtype, 1, count);
      float[] widened = new float[count + 2];
      CpuMatmul.loadRow(kernels, row, 0, widened, 1);
      for (int i = 0; i < count; i++) {
        float expected =
            dtype == DType.BF16 ? Numerics.bf16ToFloat((short) i) : Numerics.f16ToFloat((short) i);
        assertThat(Float.floatToRawIntBits(widened[i + 1]))
            .as("bits 0x%04x", i)
            .isEqualTo(Float.floatToRawIntBits(expected));
      }
      assertThat(widened[0]).isZero();
      assertThat(widened[count + 1]).isZero();
    }
  }
}
