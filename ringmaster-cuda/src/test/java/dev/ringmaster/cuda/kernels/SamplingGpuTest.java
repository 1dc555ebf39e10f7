package dev.ringmaster.cuda.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.testing.Gpu;
import dev.ringmaster.cuda.testing.Rand;
import dev.ringmaster.engine.Sampler;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Tag("gpu")
class SamplingGpuTest {
  @ParameterizedTest
  @CsvSource({"1,7", "4,129280", "9,1000", "3,151936", "2,102400", "3,1002", "1,4"})
  void argmaxMatchesTheCpuSampler(int rows, int vocab) {
    Rand r = new Rand();
    float[] logits = r.uniform(rows * vocab, 10f);
    logits[vocab - 1] = 11f; // a maximum at the very end of row 0
    if (rows > 1 && vocab > 8) {
      // a tie for the maximum of row 1, in different 16-byte loads: the lower index wins
      logits[vocab + vocab - 3] = 12f;
      logits[vocab + 5] = 12f;
    }
    int[] want = new int[rows];
    for (int i = 0; i < rows; i++) {
      want[i] = Sampler.argmax(logits, i * vocab, vocab);
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(4L * rows);
          Gpu.kernels().argmax(s.stream(), out.ptr(), s.f32(logits).ptr(), rows, vocab);
          assertThat(s.readInts(out, rows)).as("seed %d", r.seed()).containsExactly(want);
        });
  }

  /**
   * The set of tokens the device sampler may draw: top-k (with every tie at the k-th value), then
   * the top-p prefix of the kept mass.
   */
  static Set<Integer> allowed(float[] l, int off, int vocab, double temp, int topK, double topP) {
    Integer[] order = new Integer[vocab];
    for (int i = 0; i < vocab; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Float.compare(l[off + b], l[off + a]));
    int keep = topK > 0 ? Math.min(topK, vocab) : vocab;
    // The device keeps every logit equal to the k-th largest (its threshold is a value, not a
    // count); float ties do occur among 129,280 uniform draws.
    while (keep < vocab && l[off + order[keep]] == l[off + order[keep - 1]]) {
      keep++;
    }
    double[] p = new double[keep];
    double sum = 0;
    for (int i = 0; i < keep; i++) {
      p[i] = Math.exp((l[off + order[i]] - l[off + order[0]]) / temp);
      sum += p[i];
    }
    int cut = keep;
    double acc = 0;
    for (int i = 0; i < keep && topP < 1; i++) {
      acc += p[i] / sum;
      if (acc >= topP - 1e-4) { // the device sums in another order: allow its rounding
        cut = i + 1;
        break;
      }
    }
    Set<Integer> set = new HashSet<>();
    for (int i = 0; i < Math.min(keep, cut + 1); i++) {
      set.add(order[i]);
    }
    return set;
  }

  @ParameterizedTest
  @CsvSource({
    "0.7,40,0.9,32000",
    "1.0,0,0.5,1000",
    "1.3,5,1.0,129280",
    "0.5,0,1.0,77",
    "1.0,1,1.0,5000"
  })
  void samplesStayInsideTopKAndTopPAndRepeatForASeed(
      double temp, int topK, double topP, int vocab) {
    Rand r = new Rand();
    int rows = 64;
    float[] logits = r.uniform(rows * vocab, 8f);
    float[] t = new float[rows];
    int[] k = new int[rows];
    float[] p = new float[rows];
    long[] seeds = new long[rows];
    long[] offsets = new long[rows];
    for (int i = 0; i < rows; i++) {
      t[i] = (float) temp;
      k[i] = topK;
      p[i] = (float) topP;
      seeds[i] = r.random().nextLong();
      offsets[i] = i;
    }
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(4L * rows);
          DeviceBuffer dl = s.f32(logits);
          Runnable draw =
              () ->
                  Gpu.kernels()
                      .sample(
                          s.stream(),
                          out.ptr(),
                          dl.ptr(),
                          rows,
                          vocab,
                          s.f32(t).ptr(),
                          s.i32(k).ptr(),
                          s.f32(p).ptr(),
                          s.u64(seeds).ptr(),
                          s.u64(offsets).ptr());
          draw.run();
          int[] got = s.readInts(out, rows);
          for (int i = 0; i < rows; i++) {
            Set<Integer> ok = allowed(logits, i * vocab, vocab, temp, topK, topP);
            assertThat(ok).as("row %d seed %d", i, r.seed()).contains(got[i]);
            if (topK == 1) {
              assertThat(got[i]).isEqualTo(Sampler.argmax(logits, i * vocab, vocab));
            }
          }
          draw.run();
          assertThat(s.readInts(out, rows)).as("same seeds, same tokens").containsExactly(got);
        });
  }

  @Test
  void drawsFollowTheSoftmaxDistribution() {
    int vocab = 6;
    int rows = 20_000;
    float[] row = {2f, 1f, 0.5f, 0f, -1f, 3f};
    float temp = 1.5f;
    float[] logits = new float[rows * vocab];
    float[] t = new float[rows];
    int[] k = new int[rows];
    float[] p = new float[rows];
    long[] seeds = new long[rows];
    long[] offsets = new long[rows];
    for (int i = 0; i < rows; i++) {
      System.arraycopy(row, 0, logits, i * vocab, vocab);
      t[i] = temp;
      p[i] = 1f;
      seeds[i] = 1234;
      offsets[i] = i;
    }
    double[] want = new double[vocab];
    double sum = 0;
    for (int i = 0; i < vocab; i++) {
      want[i] = Math.exp(row[i] / temp);
      sum += want[i];
    }
    double total = sum;
    Gpu.run(
        s -> {
          DeviceBuffer out = s.alloc(4L * rows);
          Gpu.kernels()
              .sample(
                  s.stream(),
                  out.ptr(),
                  s.f32(logits).ptr(),
                  rows,
                  vocab,
                  s.f32(t).ptr(),
                  s.i32(k).ptr(),
                  s.f32(p).ptr(),
                  s.u64(seeds).ptr(),
                  s.u64(offsets).ptr());
          int[] got = s.readInts(out, rows);
          int[] counts = new int[vocab];
          for (int g : got) {
            counts[g]++;
          }
          for (int i = 0; i < vocab; i++) {
            assertThat(counts[i] / (double) rows)
                .as("frequency of token %d", i)
                .isCloseTo(want[i] / total, org.assertj.core.data.Offset.offset(0.015));
          }
        });
  }
}
