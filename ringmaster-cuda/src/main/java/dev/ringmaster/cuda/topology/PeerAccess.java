package dev.ringmaster.cuda.topology;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ringmaster.cuda.driver.CudaDriver;
import dev.ringmaster.cuda.driver.NativeLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;

/**
 * The driver calls about pairs of GPUs: whether one can read the other's memory, enabling that, and
 * each GPU's PCI bus id (to match CUDA ordinals with NVML's devices, whose order may differ).
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class PeerAccess {
  private static final int CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
  private static volatile PeerAccess instance;

  private final CudaDriver driver = CudaDriver.get();
  private final MethodHandle canAccessPeer;
  private final MethodHandle ctxEnablePeerAccess;
  private final MethodHandle pciBusId;

  private PeerAccess(SymbolLookup lib) {
    Linker linker = Linker.nativeLinker();
    canAccessPeer =
        linker.downcallHandle(
            lib.find("cuDeviceCanAccessPeer").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    ctxEnablePeerAccess =
        linker.downcallHandle(
            lib.find("cuCtxEnablePeerAccess").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT));
    pciBusId =
        linker.downcallHandle(
            lib.find("cuDeviceGetPCIBusId").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
  }

  /** The process-wide bindings. */
  public static PeerAccess get() {
    PeerAccess p = instance;
    if (p == null) {
      synchronized (PeerAccess.class) {
        p = instance;
        if (p == null) {
          p = new PeerAccess(NativeLibraries.loadDriver());
          instance = p;
        }
      }
    }
    return p;
  }

  private int invoke(MethodHandle h, Object... args) {
    try {
      return (int) h.invokeWithArguments(args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** Whether device {@code device} can access memory of device {@code peer} (device handles). */
  public boolean canAccessPeer(int device, int peer) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      driver.check(invoke(canAccessPeer, out, device, peer), "cuDeviceCanAccessPeer");
      return out.get(JAVA_INT, 0) != 0;
    }
  }

  /**
   * Lets the current context read and write memory of {@code peerContext} (call on the GPU's own
   * thread); enabling it twice is not an error.
   */
  public void enable(long peerContext) {
    int rc = invoke(ctxEnablePeerAccess, peerContext, 0);
    if (rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
      driver.check(rc, "cuCtxEnablePeerAccess");
    }
  }

  /** The device's PCI bus id, {@code domain:bus:device.function} in hex as NVML spells it. */
  public String pciBusId(int device) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(64);
      driver.check(invoke(pciBusId, buf, 64, device), "cuDeviceGetPCIBusId");
      return buf.getString(0, StandardCharsets.US_ASCII);
    }
  }
}
