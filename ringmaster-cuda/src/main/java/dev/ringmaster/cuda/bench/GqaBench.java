package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.GqaAttention;
import dev.ringmaster.cuda.kernels.GqaWorkspace;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Locale;

/**
 * KernelBench rows of the GQA kernels ({@link GqaAttention}) in the Qwen3-30B-A3B shape (32 query
 * heads, 4 KV heads of 128, blocks of 16): decode attention at batch 1-128 and contexts 512-32768
 * with the split count {@link GqaAttention#splits} picks, a 256-token extend chunk of one sequence
 * (every token its own query), and the norm + rope + append launch. GB/s counts the K/V bytes each
 * query token reads (a sequence's rows once per token).
 */
final class GqaBench {
  private static final GqaAttention.Shape SHAPE = new GqaAttention.Shape(32, 4, 128);
  private static final int BLOCK = 16;
  private static final int SMS = 132;
  private static final int MAX_SPLITS = 256;

  private GqaBench() {}

  /** Adds the rows to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s) {
    for (int len : new int[] {512, 4096, 32768}) {
      for (int batch : new int[] {1, 8, 32, 128}) {
        if ((long) batch * len <= 1L << 20) {
          decode(b, k, s, batch, len);
        }
      }
    }
    extend(b, k, s, 256, 4096);
    extend(b, k, s, 256, 32768);
    for (int batch : new int[] {1, 128}) {
      append(b, k, s, batch);
    }
  }

  private static void decode(KernelBench b, RingmasterKernels k, CudaStream s, int batch, int len) {
    int[] seq = new int[batch];
    int[] pos = new int[batch];
    for (int i = 0; i < batch; i++) {
      seq[i] = i;
      pos[i] = len - 1;
    }
    int splits = GqaAttention.splits(batch, SHAPE.kvHeads(), len, SMS, MAX_SPLITS);
    attention(b, k, s, batch, len, seq, pos, splits, "decode, batch " + batch);
  }

  private static void extend(KernelBench b, RingmasterKernels k, CudaStream s, int n, int len) {
    int[] pos = new int[n];
    for (int t = 0; t < n; t++) {
      pos[t] = len - n + t;
    }
    int splits = GqaAttention.splits(n, SHAPE.kvHeads(), len, SMS, MAX_SPLITS);
    attention(b, k, s, 1, len, new int[n], pos, splits, "extend of " + n + " tokens");
  }

  private static void attention(
      KernelBench b,
      RingmasterKernels k,
      CudaStream s,
      int numSeqs,
      int len,
      int[] seq,
      int[] pos,
      int splits,
      String what) {
    int n = seq.length;
    int blocksPerSeq = (len + BLOCK - 1) / BLOCK;
    int[] ids = new int[numSeqs * blocksPerSeq];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = i;
    }
    GqaAttention g = k.gqaAttention();
    long rows = (long) ids.length * BLOCK;
    try (DeviceBuffer cache = b.randomBf16(rows * SHAPE.cacheRowWidth(), 1f);
        DeviceBuffer table = ints(s, ids);
        DeviceBuffer seqs = ints(s, seq);
        DeviceBuffer positions = ints(s, pos);
        DeviceBuffer q = b.randomF32(n * SHAPE.queryWidth());
        DeviceBuffer out = DeviceBuffer.allocate(4L * n * SHAPE.queryWidth());
        GqaWorkspace ws = new GqaWorkspace(splits, (long) n * splits, SHAPE)) {
      double ms =
          b.time(
              i ->
                  g.attention(
                      s,
                      ws,
                      SHAPE,
                      out.ptr(),
                      q.ptr(),
                      SHAPE.queryWidth(),
                      cache.ptr(),
                      table.ptr(),
                      blocksPerSeq,
                      seqs.ptr(),
                      positions.ptr(),
                      n,
                      BLOCK,
                      splits,
                      0.088f));
      double bytes = 0;
      for (int p : pos) {
        bytes += (p + 1.0) * SHAPE.cacheBytesPerToken();
      }
      b.row(
          String.format(
              Locale.ROOT, "gqa %s, 32/4 heads of 128, context %d, %d splits", what, len, splits),
          ms,
          bytes / (ms * 1e6));
    }
  }

  private static void append(KernelBench b, RingmasterKernels k, CudaStream s, int n) {
    int[] slots = new int[n];
    int[] pos = new int[n];
    for (int t = 0; t < n; t++) {
      slots[t] = 1 + t;
      pos[t] = 1000 + t;
    }
    int qw = SHAPE.queryWidth();
    int kw = SHAPE.kvHeads() * SHAPE.headDim();
    int width = qw + 2 * kw;
    GqaAttention g = k.gqaAttention();
    try (DeviceBuffer cache = b.randomBf16((long) (n + 1) * SHAPE.cacheRowWidth(), 1f);
        DeviceBuffer x = b.randomF32(n * width);
        DeviceBuffer norm = b.randomF32(SHAPE.headDim());
        DeviceBuffer invFreq = b.randomF32(SHAPE.headDim() / 2);
        DeviceBuffer slotBuf = ints(s, slots);
        DeviceBuffer positions = ints(s, pos)) {
      double ms =
          b.time(
              i ->
                  g.qkNormRopeAppend(
                      s,
                      SHAPE,
                      x.ptr(),
                      width,
                      x.ptr(4L * qw),
                      width,
                      x.ptr(4L * (qw + kw)),
                      width,
                      norm.ptr(),
                      norm.ptr(),
                      1e-6f,
                      positions.ptr(),
                      invFreq.ptr(),
                      1f,
                      false,
                      cache.ptr(),
                      slotBuf.ptr(),
                      n));
      b.row(
          String.format(
              Locale.ROOT, "gqa q/k norm + rope + append, 32/4 heads of 128, %d tokens", n),
          ms,
          (8.0 * n * width + 2.0 * n * SHAPE.cacheRowWidth()) / (ms * 1e6));
    }
  }

  private static DeviceBuffer ints(CudaStream s, int[] v) {
    DeviceBuffer d = DeviceBuffer.allocate(4L * v.length);
    d.upload(s, v);
    return d;
  }
}
