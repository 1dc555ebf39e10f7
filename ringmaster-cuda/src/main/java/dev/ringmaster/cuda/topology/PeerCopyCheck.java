package dev.ringmaster.cuda.topology;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.CudaException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Whether peer access between two GPUs actually works: with peer access enabled from the
 * destination's context to the source's, a small buffer is copied device to device and read back.
 * {@code cuDeviceCanAccessPeer} only says the driver allows it; this copy is what the peer-memory
 * allreduce relies on. Runs on the calling thread, switching between the two primary contexts.
 */
public final class PeerCopyCheck {
  private static final int BYTES = 1 << 20;

  private PeerCopyCheck() {}

  /**
   * Copies 1 MiB from GPU {@code src} to GPU {@code dst} (CUDA ordinals) and compares it: {@code
   * ok}, or {@code failed: } with the error or the first differing word.
   */
  public static String check(int dst, int src) {
    CudaDriver d = CudaDriver.get();
    d.init();
    int dstDev = d.device(dst);
    int srcDev = d.device(src);
    long dstCtx = d.primaryContextRetain(dstDev);
    long srcCtx = d.primaryContextRetain(srcDev);
    long srcBuf = 0;
    long dstBuf = 0;
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(BYTES, 16);
      MemorySegment back = a.allocate(BYTES, 16);
      for (int i = 0; i < BYTES / 4; i++) {
        out.setAtIndex(JAVA_INT, i, i * 31 + src * 7 + 1);
      }
      d.setCurrentContext(srcCtx);
      srcBuf = d.memAlloc(BYTES);
      d.memcpyHtoDAsync(srcBuf, out, BYTES, 0);
      d.streamSynchronize(0);
      d.setCurrentContext(dstCtx);
      PeerAccess.get().enable(srcCtx);
      dstBuf = d.memAlloc(BYTES);
      d.memcpyDtoDAsync(dstBuf, srcBuf, BYTES, 0);
      d.memcpyDtoHAsync(back, dstBuf, BYTES, 0);
      d.streamSynchronize(0);
      for (int i = 0; i < BYTES / 4; i++) {
        if (back.getAtIndex(JAVA_INT, i) != out.getAtIndex(JAVA_INT, i)) {
          return "failed: word " + i + " differs after the copy";
        }
      }
      return "ok";
    } catch (CudaException e) {
      return "failed: " + e.getMessage();
    } finally {
      if (dstBuf != 0) {
        d.setCurrentContext(dstCtx);
        d.memFree(dstBuf);
      }
      if (srcBuf != 0) {
        d.setCurrentContext(srcCtx);
        d.memFree(srcBuf);
      }
      d.primaryContextRelease(srcDev);
      d.primaryContextRelease(dstDev);
    }
  }
}
