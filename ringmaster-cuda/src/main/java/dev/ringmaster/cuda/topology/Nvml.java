package dev.ringmaster.cuda.topology;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;

/**
 * The few NVML calls ({@code libnvidia-ml.so.1}, installed with the driver) that describe how GPUs
 * are linked: the PCIe common ancestor of two GPUs, NVML's peer-to-peer status and each NVLink's
 * state and far end. Device handles ({@code nvmlDevice_t}) are passed as {@code long}. Opened with
 * {@code nvmlInit_v2}; {@link #close()} shuts NVML down.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class Nvml implements AutoCloseable {
  /** {@code NVML_NVLINK_MAX_LINKS} (18 on Hopper). */
  public static final int MAX_NVLINKS = 18;

  private static final int NVML_P2P_CAPS_INDEX_READ = 0;
  private static final int NVML_P2P_CAPS_INDEX_NVLINK = 2;
  private static final int PCI_INFO_BYTES = 68;
  private static final int PCI_INFO_BUS_ID_OFFSET = 36;

  private final MethodHandle errorString;
  private final MethodHandle shutdown;
  private final MethodHandle handleByIndex;
  private final MethodHandle handleByPciBusId;
  private final MethodHandle commonAncestor;
  private final MethodHandle p2pStatus;
  private final MethodHandle nvLinkState;
  private final MethodHandle nvLinkRemotePci;
  private final MethodHandle driverVersion;
  private final MethodHandle nvmlVersion;
  private final MethodHandle maxClock;

  private Nvml(SymbolLookup lib) {
    Linker l = Linker.nativeLinker();
    errorString = bind(l, lib, "nvmlErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    shutdown = bind(l, lib, "nvmlShutdown", FunctionDescriptor.of(JAVA_INT));
    handleByIndex =
        bind(
            l,
            lib,
            "nvmlDeviceGetHandleByIndex_v2",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    handleByPciBusId =
        bind(
            l,
            lib,
            "nvmlDeviceGetHandleByPciBusId_v2",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    commonAncestor =
        bind(
            l,
            lib,
            "nvmlDeviceGetTopologyCommonAncestor",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS));
    p2pStatus =
        bind(
            l,
            lib,
            "nvmlDeviceGetP2PStatus",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS));
    nvLinkState =
        bind(
            l,
            lib,
            "nvmlDeviceGetNvLinkState",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS));
    nvLinkRemotePci =
        bind(
            l,
            lib,
            "nvmlDeviceGetNvLinkRemotePciInfo_v2",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS));
    driverVersion =
        bind(
            l,
            lib,
            "nvmlSystemGetDriverVersion",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    nvmlVersion =
        bind(
            l, lib, "nvmlSystemGetNVMLVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    maxClock =
        bind(
            l,
            lib,
            "nvmlDeviceGetMaxClockInfo",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS));
    MethodHandle init = bind(l, lib, "nvmlInit_v2", FunctionDescriptor.of(JAVA_INT));
    check(invoke(init), "nvmlInit_v2");
  }

  private static MethodHandle bind(Linker l, SymbolLookup lib, String name, FunctionDescriptor fd) {
    return l.downcallHandle(
        lib.find(name)
            .orElseThrow(() -> new IllegalStateException("libnvidia-ml.so.1 lacks " + name)),
        fd);
  }

  /** Loads and initialises NVML; throws {@link IllegalStateException} saying why it cannot. */
  public static Nvml open() {
    SymbolLookup lib;
    try {
      lib = SymbolLookup.libraryLookup("libnvidia-ml.so.1", Arena.global());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(
          "NVML (libnvidia-ml.so.1, part of the NVIDIA driver) cannot be loaded", e);
    }
    return new Nvml(lib);
  }

  private static int invoke(MethodHandle h, Object... args) {
    try {
      return (int) h.invokeWithArguments(args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private void check(int rc, String call) {
    if (rc != 0) {
      String text;
      try {
        MemorySegment s = (MemorySegment) errorString.invoke(rc);
        text = s.reinterpret(256).getString(0, StandardCharsets.US_ASCII);
      } catch (Throwable t) {
        text = "nvmlReturn " + rc;
      }
      throw new IllegalStateException(call + " failed (" + rc + "): " + text);
    }
  }

  /** The driver's version string, e.g. {@code 580.159.04}. */
  public String driverVersion() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(96);
      check(invoke(driverVersion, buf, 96), "nvmlSystemGetDriverVersion");
      return buf.getString(0, StandardCharsets.US_ASCII);
    }
  }

  /** NVML's own version string, e.g. {@code 13.580.159.04}. */
  public String nvmlVersion() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(96);
      check(invoke(nvmlVersion, buf, 96), "nvmlSystemGetNVMLVersion");
      return buf.getString(0, StandardCharsets.US_ASCII);
    }
  }

  /** The highest SM clock of {@code device} in MHz, 0 where NVML does not say. */
  public int maxSmClockMhz(long device) {
    return maxClock(device, 1); // NVML_CLOCK_SM
  }

  /** The highest memory clock of {@code device} in MHz, 0 where NVML does not say. */
  public int maxMemoryClockMhz(long device) {
    return maxClock(device, 2); // NVML_CLOCK_MEM
  }

  private int maxClock(long device, int type) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      return invoke(maxClock, device, type, out) == 0 ? out.get(JAVA_INT, 0) : 0;
    }
  }

  /** The handle of NVML device {@code index} (NVML orders by PCI bus id). */
  public long deviceByIndex(int index) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      check(invoke(handleByIndex, index, out), "nvmlDeviceGetHandleByIndex_v2");
      return out.get(JAVA_LONG, 0);
    }
  }

  /** The handle of the device at PCI bus id {@code busId}. */
  public long deviceByPciBusId(String busId) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      check(
          invoke(handleByPciBusId, a.allocateFrom(busId), out), "nvmlDeviceGetHandleByPciBusId_v2");
      return out.get(JAVA_LONG, 0);
    }
  }

  /** The {@code nvmlGpuTopologyLevel_t} of the closest common ancestor of two devices. */
  public int commonAncestor(long a, long b) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_INT);
      check(invoke(commonAncestor, a, b, out), "nvmlDeviceGetTopologyCommonAncestor");
      return out.get(JAVA_INT, 0);
    }
  }

  /** Whether NVML reports peer-to-peer reads from {@code a} to {@code b} as supported. */
  public boolean p2pReadOk(long a, long b) {
    return p2pOk(a, b, NVML_P2P_CAPS_INDEX_READ);
  }

  /**
   * Whether NVML reports {@code a} and {@code b} connected by NVLink. Needed where the links'
   * far-end PCI ids are not the ids the GPUs show (GPUs passed into a virtual machine).
   */
  public boolean p2pNvLinkOk(long a, long b) {
    return p2pOk(a, b, NVML_P2P_CAPS_INDEX_NVLINK);
  }

  private boolean p2pOk(long a, long b, int caps) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_INT);
      // an error (say NOT_SUPPORTED on an older GPU) means "not reported as supported"
      return invoke(p2pStatus, a, b, caps, out) == 0 && out.get(JAVA_INT, 0) == 0; // STATUS_OK
    }
  }

  /** Number of NVLinks of {@code device} that are up. */
  public int activeNvLinks(long device) {
    int n = 0;
    try (Arena a = Arena.ofConfined()) {
      MemorySegment state = a.allocate(JAVA_INT);
      for (int link = 0; link < MAX_NVLINKS; link++) {
        if (invoke(nvLinkState, device, link, state) == 0 && state.get(JAVA_INT, 0) == 1) {
          n++;
        }
      }
    }
    return n;
  }

  /**
   * The PCI bus id at the far end of NVLink {@code link} of {@code device}, or null when the link
   * is absent or down.
   */
  public String nvLinkPeer(long device, int link) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment state = a.allocate(JAVA_INT);
      if (invoke(nvLinkState, device, link, state) != 0 || state.get(JAVA_INT, 0) != 1) {
        return null; // not supported, no such link, or NVML_FEATURE_DISABLED
      }
      MemorySegment pci = a.allocate(PCI_INFO_BYTES, 4);
      if (invoke(nvLinkRemotePci, device, link, pci) != 0) {
        return null;
      }
      return pci.getString(PCI_INFO_BUS_ID_OFFSET, StandardCharsets.US_ASCII);
    }
  }

  @Override
  public void close() {
    check(invoke(shutdown), "nvmlShutdown");
  }
}
