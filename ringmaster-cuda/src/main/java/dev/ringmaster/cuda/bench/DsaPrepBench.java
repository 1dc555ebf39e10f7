package dev.ringmaster.cuda.bench;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import dev.ringmaster.cuda.kernels.DsaKernels;
import dev.ringmaster.cuda.kernels.RingmasterKernels;
import java.util.Locale;

/**
 * KernelBench rows of the DSA indexer's key preparation in the GLM-5 shape (hidden 6,144; 32
 * indexer heads of 128, rope 64) for one layer and decode step: the {@code wk} and {@code
 * weights_proj} GEMVs of the attention input, the key's LayerNorm, the ropes of the key and of the
 * query heads and the key's append to the cache (bf16), or its FP8 quantization with the query
 * heads' (FP8 keys), as the separate launches ({@code --kernel-option indexer-fused-ops=false}) and
 * as the fused ones (one {@code gemv2}, one {@code rm_indexer_qk_fused}). GB/s counts the two
 * projections' weight bytes.
 */
final class DsaPrepBench {
  private static final int HIDDEN = 6144;
  private static final int HEADS = 32;
  private static final int DIM = 128;
  private static final int ROPE = 64;

  private DsaPrepBench() {}

  /** Adds the rows for decode steps of {@code batch} tokens to {@code b}. */
  static void run(KernelBench b, RingmasterKernels k, CudaStream s, int batch) {
    DsaKernels dsa = k.dsa();
    int slots = batch * 4;
    try (DeviceBuffer wk = b.randomBf16((long) DIM * HIDDEN, 0.02f);
        DeviceBuffer wp = b.randomBf16((long) HEADS * HIDDEN, 0.02f);
        DeviceBuffer x = b.randomF32(batch * HIDDEN);
        DeviceBuffer q = b.randomF32(batch * HEADS * DIM);
        DeviceBuffer key = DeviceBuffer.allocate(4L * batch * DIM);
        DeviceBuffer w = DeviceBuffer.allocate(4L * batch * HEADS);
        DeviceBuffer gamma = b.randomF32(DIM);
        DeviceBuffer beta = b.randomF32(DIM);
        DeviceBuffer invFreq = b.randomF32(ROPE / 2);
        DeviceBuffer positions = DeviceBuffer.allocate(4L * batch);
        DeviceBuffer slotIds = DeviceBuffer.allocate(4L * batch);
        DeviceBuffer cache = DeviceBuffer.allocate(2L * slots * DIM);
        DeviceBuffer kScales = DeviceBuffer.allocate(4L * slots);
        DeviceBuffer qScales = DeviceBuffer.allocate(4L * batch * HEADS)) {
      int[] ids = new int[batch];
      for (int i = 0; i < batch; i++) {
        ids[i] = 3 * i + 1;
      }
      positions.upload(s, ids);
      slotIds.upload(s, ids);
      double weightBytes = 2.0 * (DIM + HEADS) * HIDDEN;
      for (boolean fp8 : new boolean[] {false, true}) {
        long scalesPtr = fp8 ? kScales.ptr() : 0;
        double msSeparate =
            b.time(
                i -> {
                  k.gemv(s, key.ptr(), wk.ptr(), x.ptr(), DIM, HIDDEN, batch);
                  k.gemv(s, w.ptr(), wp.ptr(), x.ptr(), HEADS, HIDDEN, batch);
                  dsa.layerNorm(s, key.ptr(), gamma.ptr(), beta.ptr(), batch, DIM, 1e-6f);
                  k.rope(
                      s,
                      q.ptr(),
                      HEADS * DIM,
                      DIM,
                      0,
                      positions.ptr(),
                      invFreq.ptr(),
                      batch,
                      HEADS,
                      ROPE,
                      1f,
                      true);
                  k.rope(
                      s,
                      key.ptr(),
                      DIM,
                      0,
                      0,
                      positions.ptr(),
                      invFreq.ptr(),
                      batch,
                      1,
                      ROPE,
                      1f,
                      true);
                  if (fp8) {
                    dsa.quantizeFp8(
                        s, cache.ptr(), scalesPtr, 0, key.ptr(), slotIds.ptr(), batch, DIM);
                    dsa.quantizeFp8(s, 0, qScales.ptr(), q.ptr(), q.ptr(), 0, batch * HEADS, DIM);
                  } else {
                    k.mla()
                        .mlaCacheAppend(s, cache.ptr(), key.ptr(), DIM, slotIds.ptr(), batch, DIM);
                  }
                });
        double msFused =
            b.time(
                i -> {
                  k.gemv2(
                      s, key.ptr(), wk.ptr(), DIM, w.ptr(), wp.ptr(), HEADS, x.ptr(), HIDDEN,
                      batch);
                  dsa.indexerQkFused(
                      s,
                      q.ptr(),
                      key.ptr(),
                      gamma.ptr(),
                      beta.ptr(),
                      1e-6f,
                      batch,
                      HEADS,
                      DIM,
                      ROPE,
                      positions.ptr(),
                      invFreq.ptr(),
                      1f,
                      true,
                      cache.ptr(),
                      scalesPtr,
                      slotIds.ptr(),
                      fp8 ? qScales.ptr() : 0);
                });
        String keys = fp8 ? "fp8 keys" : "bf16 keys";
        b.row(
            label("separate launches", keys, batch), msSeparate, weightBytes / (msSeparate * 1e6));
        b.row(label("fused launches", keys, batch), msFused, weightBytes / (msFused * 1e6));
      }
    }
  }

  private static String label(String how, String keys, int batch) {
    return String.format(
        Locale.ROOT,
        "dsa indexer key prep (wk, weights_proj, norm, ropes, append), %s, %s, batch %d",
        keys,
        how,
        batch);
  }
}
