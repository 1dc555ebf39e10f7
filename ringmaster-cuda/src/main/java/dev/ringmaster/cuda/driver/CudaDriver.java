package dev.ringmaster.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Typed bindings to the CUDA driver API ({@code libcuda.so.1}) through the FFM API. Handles
 * (contexts, streams, events, modules, functions, graphs) and device pointers are 64-bit values
 * passed as {@code long}; device memory is never wrapped in a {@link MemorySegment}. Symbols are
 * bound by the versioned names that {@code cuda.h} maps the plain names to ({@code cuMemAlloc_v2},
 * ...), so the calls have the CUDA 12/13 semantics. Every call's status is checked; a failure
 * throws {@link CudaException} with the call, the CUresult name and its description.
 *
 * <p>A context is current per OS thread: call the context-dependent methods from the thread a
 * {@code GpuThread} owns.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class CudaDriver {
  private static final Linker LINKER = Linker.nativeLinker();
  private static final FunctionDescriptor I = FunctionDescriptor.of(JAVA_INT);
  private static volatile CudaDriver instance;

  private final SymbolLookup lib;
  private final List<String> missing = new ArrayList<>();

  private final MethodHandle cuGetErrorName;
  private final MethodHandle cuGetErrorString;
  private final MethodHandle cuInit;
  private final MethodHandle cuDriverGetVersion;
  private final MethodHandle cuDeviceGetCount;
  private final MethodHandle cuDeviceGet;
  private final MethodHandle cuDeviceGetName;
  private final MethodHandle cuDeviceGetAttribute;
  private final MethodHandle cuDeviceTotalMem;
  private final MethodHandle cuDevicePrimaryCtxRetain;
  private final MethodHandle cuDevicePrimaryCtxRelease;
  private final MethodHandle cuCtxSetCurrent;
  private final MethodHandle cuMemGetInfo;
  private final MethodHandle cuMemAlloc;
  private final MethodHandle cuMemFree;
  private final MethodHandle cuMemHostAlloc;
  private final MethodHandle cuMemFreeHost;
  private final MethodHandle cuMemcpyHtoDAsync;
  private final MethodHandle cuMemcpyDtoHAsync;
  private final MethodHandle cuMemcpyDtoDAsync;
  private final MethodHandle cuMemsetD8Async;
  private final MethodHandle cuMemsetD32Async;
  private final MethodHandle cuStreamCreate;
  private final MethodHandle cuStreamDestroy;
  private final MethodHandle cuStreamSynchronize;
  private final MethodHandle cuEventCreate;
  private final MethodHandle cuEventDestroy;
  private final MethodHandle cuEventRecord;
  private final MethodHandle cuEventSynchronize;
  private final MethodHandle cuStreamWaitEvent;
  private final MethodHandle cuEventElapsedTime;
  private final MethodHandle cuModuleLoadData;
  private final MethodHandle cuModuleUnload;
  private final MethodHandle cuModuleGetFunction;
  private final MethodHandle cuFuncSetAttribute;
  private final MethodHandle cuLaunchKernel;
  private final MethodHandle cuLaunchKernelEx;
  private final MethodHandle cuStreamBeginCapture;
  private final MethodHandle cuStreamEndCapture;
  private final MethodHandle cuGraphInstantiateWithFlags;
  private final MethodHandle cuGraphLaunch;
  private final MethodHandle cuGraphExecUpdate;
  private final MethodHandle cuGraphExecDestroy;
  private final MethodHandle cuGraphDestroy;

  private CudaDriver(SymbolLookup lib) {
    this.lib = lib;
    cuGetErrorName = bind(I.appendArgumentLayouts(JAVA_INT, ADDRESS), "cuGetErrorName");
    cuGetErrorString = bind(I.appendArgumentLayouts(JAVA_INT, ADDRESS), "cuGetErrorString");
    cuInit = bind(I.appendArgumentLayouts(JAVA_INT), "cuInit");
    cuDriverGetVersion = bind(I.appendArgumentLayouts(ADDRESS), "cuDriverGetVersion");
    cuDeviceGetCount = bind(I.appendArgumentLayouts(ADDRESS), "cuDeviceGetCount");
    cuDeviceGet = bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT), "cuDeviceGet");
    cuDeviceGetName = bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetName");
    cuDeviceGetAttribute =
        bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetAttribute");
    cuDeviceTotalMem = bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT), "cuDeviceTotalMem_v2");
    cuDevicePrimaryCtxRetain =
        bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT), "cuDevicePrimaryCtxRetain");
    cuDevicePrimaryCtxRelease =
        bind(I.appendArgumentLayouts(JAVA_INT), "cuDevicePrimaryCtxRelease_v2");
    cuCtxSetCurrent = bind(I.appendArgumentLayouts(JAVA_LONG), "cuCtxSetCurrent");
    cuMemGetInfo = bind(I.appendArgumentLayouts(ADDRESS, ADDRESS), "cuMemGetInfo_v2");
    cuMemAlloc = bind(I.appendArgumentLayouts(ADDRESS, JAVA_LONG), "cuMemAlloc_v2");
    cuMemFree = bind(I.appendArgumentLayouts(JAVA_LONG), "cuMemFree_v2");
    cuMemHostAlloc = bind(I.appendArgumentLayouts(ADDRESS, JAVA_LONG, JAVA_INT), "cuMemHostAlloc");
    cuMemFreeHost = bind(I.appendArgumentLayouts(ADDRESS), "cuMemFreeHost");
    cuMemcpyHtoDAsync =
        bind(
            I.appendArgumentLayouts(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG),
            "cuMemcpyHtoDAsync_v2");
    cuMemcpyDtoHAsync =
        bind(
            I.appendArgumentLayouts(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyDtoHAsync_v2");
    cuMemcpyDtoDAsync =
        bind(
            I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            "cuMemcpyDtoDAsync_v2");
    cuMemsetD8Async =
        bind(I.appendArgumentLayouts(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG), "cuMemsetD8Async");
    cuMemsetD32Async =
        bind(
            I.appendArgumentLayouts(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG), "cuMemsetD32Async");
    cuStreamCreate = bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT), "cuStreamCreate");
    cuStreamDestroy = bind(I.appendArgumentLayouts(JAVA_LONG), "cuStreamDestroy_v2");
    cuStreamSynchronize = bind(I.appendArgumentLayouts(JAVA_LONG), "cuStreamSynchronize");
    cuEventCreate = bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT), "cuEventCreate");
    cuEventDestroy = bind(I.appendArgumentLayouts(JAVA_LONG), "cuEventDestroy_v2");
    cuEventRecord = bindCritical(I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG), "cuEventRecord");
    cuEventSynchronize = bind(I.appendArgumentLayouts(JAVA_LONG), "cuEventSynchronize");
    cuStreamWaitEvent =
        bindCritical(I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, JAVA_INT), "cuStreamWaitEvent");
    cuEventElapsedTime =
        bind(
            I.appendArgumentLayouts(ADDRESS, JAVA_LONG, JAVA_LONG),
            "cuEventElapsedTime_v2",
            "cuEventElapsedTime");
    cuModuleLoadData = bind(I.appendArgumentLayouts(ADDRESS, ADDRESS), "cuModuleLoadData");
    cuModuleUnload = bind(I.appendArgumentLayouts(JAVA_LONG), "cuModuleUnload");
    cuModuleGetFunction =
        bind(I.appendArgumentLayouts(ADDRESS, JAVA_LONG, ADDRESS), "cuModuleGetFunction");
    cuFuncSetAttribute =
        bind(I.appendArgumentLayouts(JAVA_LONG, JAVA_INT, JAVA_INT), "cuFuncSetAttribute");
    cuLaunchKernel =
        bindCritical(
            I.appendArgumentLayouts(
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_LONG, ADDRESS, ADDRESS),
            "cuLaunchKernel");
    // Unversioned in cuda.h (only a _ptsz variant for per-thread default streams); CUDA 12.0+.
    cuLaunchKernelEx =
        bindCritical(
            I.appendArgumentLayouts(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS), "cuLaunchKernelEx");
    cuStreamBeginCapture =
        bind(I.appendArgumentLayouts(JAVA_LONG, JAVA_INT), "cuStreamBeginCapture_v2");
    cuStreamEndCapture = bind(I.appendArgumentLayouts(JAVA_LONG, ADDRESS), "cuStreamEndCapture");
    cuGraphInstantiateWithFlags =
        bind(I.appendArgumentLayouts(ADDRESS, JAVA_LONG, JAVA_LONG), "cuGraphInstantiateWithFlags");
    cuGraphLaunch = bindCritical(I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG), "cuGraphLaunch");
    cuGraphExecUpdate =
        bind(I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, ADDRESS), "cuGraphExecUpdate_v2");
    cuGraphExecDestroy = bind(I.appendArgumentLayouts(JAVA_LONG), "cuGraphExecDestroy");
    cuGraphDestroy = bind(I.appendArgumentLayouts(JAVA_LONG), "cuGraphDestroy");
    if (!missing.isEmpty()) {
      throw new CudaException(
          "the NVIDIA driver lacks " + missing + ": install a driver for CUDA 12.8 or newer", null);
    }
  }

  /** The process-wide driver bindings; throws {@link CudaException} when no driver is installed. */
  public static CudaDriver get() {
    CudaDriver d = instance;
    if (d == null) {
      synchronized (CudaDriver.class) {
        d = instance;
        if (d == null) {
          d = new CudaDriver(NativeLibraries.loadDriver());
          instance = d;
        }
      }
    }
    return d;
  }

  private MethodHandle bind(FunctionDescriptor fd, String... names) {
    return bind(fd, false, names);
  }

  private MethodHandle bindCritical(FunctionDescriptor fd, String name) {
    return bind(fd, true, name);
  }

  private MethodHandle bind(FunctionDescriptor fd, boolean critical, String... names) {
    for (String name : names) {
      var sym = lib.find(name);
      if (sym.isPresent()) {
        return critical
            ? LINKER.downcallHandle(sym.get(), fd, Linker.Option.critical(false))
            : LINKER.downcallHandle(sym.get(), fd);
      }
    }
    missing.add(names[0]);
    return null;
  }

  // ---- errors ----

  /** Throws {@link CudaException} naming {@code call} when {@code status} is not CUDA_SUCCESS. */
  public void check(int status, String call) {
    if (status != 0) {
      throw new CudaException(
          call, status, errorText(cuGetErrorName, status), errorText(cuGetErrorString, status));
    }
  }

  private static String errorText(MethodHandle h, int status) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      int rc = (int) h.invoke(status, out);
      MemorySegment str = out.get(ADDRESS, 0);
      if (rc != 0 || str.address() == 0) {
        return "unknown CUresult";
      }
      return str.reinterpret(4096).getString(0, StandardCharsets.US_ASCII);
    } catch (Throwable t) {
      return "unknown CUresult";
    }
  }

  private static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException(t);
  }

  private int call(MethodHandle h, Object... args) {
    try {
      return (int) h.invokeWithArguments(args);
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  private void checked(String name, MethodHandle h, Object... args) {
    check(call(h, args), name);
  }

  private int outInt(String name, MethodHandle h, Object... rest) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      Object[] args = prepend(out, rest);
      checked(name, h, args);
      return out.get(JAVA_INT, 0);
    }
  }

  private long outLong(String name, MethodHandle h, Object... rest) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      Object[] args = prepend(out, rest);
      checked(name, h, args);
      return out.get(JAVA_LONG, 0);
    }
  }

  private static Object[] prepend(Object first, Object[] rest) {
    Object[] args = new Object[rest.length + 1];
    args[0] = first;
    System.arraycopy(rest, 0, args, 1, rest.length);
    return args;
  }

  // ---- initialisation and devices ----

  /** cuInit(0): must succeed before any other call. */
  public void init() {
    checked("cuInit", cuInit, 0);
  }

  /** The driver's CUDA version, e.g. 13000 for 13.0. */
  public int driverVersion() {
    return outInt("cuDriverGetVersion", cuDriverGetVersion);
  }

  /** Number of CUDA devices. */
  public int deviceCount() {
    return outInt("cuDeviceGetCount", cuDeviceGetCount);
  }

  /** The device handle of ordinal {@code ordinal}. */
  public int device(int ordinal) {
    return outInt("cuDeviceGet", cuDeviceGet, ordinal);
  }

  /** The device's marketing name. */
  public String deviceName(int device) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment buf = a.allocate(256);
      checked("cuDeviceGetName", cuDeviceGetName, buf, 256, device);
      return buf.getString(0, StandardCharsets.UTF_8);
    }
  }

  /** A CU_DEVICE_ATTRIBUTE_* value. */
  public int deviceAttribute(int device, int attribute) {
    return outInt("cuDeviceGetAttribute", cuDeviceGetAttribute, attribute, device);
  }

  /** Total device memory in bytes. */
  public long deviceTotalMemory(int device) {
    return outLong("cuDeviceTotalMem_v2", cuDeviceTotalMem, device);
  }

  /** Retains the device's primary context and returns it. */
  public long primaryContextRetain(int device) {
    return outLong("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, device);
  }

  /** Releases one reference to the device's primary context. */
  public void primaryContextRelease(int device) {
    checked("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease, device);
  }

  /** Makes {@code context} current on the calling OS thread. */
  public void setCurrentContext(long context) {
    checked("cuCtxSetCurrent", cuCtxSetCurrent, context);
  }

  /** {free, total} device memory in bytes for the current context's device. */
  public long[] memoryInfo() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment free = a.allocate(JAVA_LONG);
      MemorySegment total = a.allocate(JAVA_LONG);
      checked("cuMemGetInfo_v2", cuMemGetInfo, free, total);
      return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
    }
  }

  // ---- memory ----

  /** Allocates {@code bytes} of device memory (256-byte aligned). */
  public long memAlloc(long bytes) {
    return outLong("cuMemAlloc_v2", cuMemAlloc, Math.max(bytes, 1));
  }

  /** Frees device memory. */
  public void memFree(long ptr) {
    checked("cuMemFree_v2", cuMemFree, ptr);
  }

  /** Allocates page-locked host memory of {@code bytes}, visible as a segment of that size. */
  public MemorySegment memHostAlloc(long bytes) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      checked("cuMemHostAlloc", cuMemHostAlloc, out, bytes, 0);
      return out.get(ADDRESS, 0).reinterpret(bytes);
    }
  }

  /** Frees page-locked host memory from {@link #memHostAlloc}. */
  public void memFreeHost(MemorySegment host) {
    checked("cuMemFreeHost", cuMemFreeHost, host);
  }

  /** Queues a host-to-device copy (the host memory must stay valid until the stream reaches it). */
  public void memcpyHtoDAsync(long dst, MemorySegment src, long bytes, long stream) {
    checked("cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync, dst, src, bytes, stream);
  }

  /** Queues a device-to-host copy. */
  public void memcpyDtoHAsync(MemorySegment dst, long src, long bytes, long stream) {
    checked("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync, dst, src, bytes, stream);
  }

  /** Queues a device-to-device copy. */
  public void memcpyDtoDAsync(long dst, long src, long bytes, long stream) {
    checked("cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync, dst, src, bytes, stream);
  }

  /** Queues setting {@code count} bytes to {@code value}. */
  public void memsetD8Async(long dst, int value, long count, long stream) {
    checked("cuMemsetD8Async", cuMemsetD8Async, dst, value, count, stream);
  }

  /** Queues setting {@code count} 32-bit words to {@code value} (e.g. NaN bits to poison f32). */
  public void memsetD32Async(long dst, int value, long count, long stream) {
    checked("cuMemsetD32Async", cuMemsetD32Async, dst, value, count, stream);
  }

  // ---- streams and events ----

  /** Creates a stream with CU_STREAM_* flags. */
  public long streamCreate(int flags) {
    return outLong("cuStreamCreate", cuStreamCreate, flags);
  }

  /** Destroys a stream. */
  public void streamDestroy(long stream) {
    checked("cuStreamDestroy_v2", cuStreamDestroy, stream);
  }

  /** Waits until the stream's work is done. */
  public void streamSynchronize(long stream) {
    checked("cuStreamSynchronize", cuStreamSynchronize, stream);
  }

  /** Creates an event with CU_EVENT_* flags. */
  public long eventCreate(int flags) {
    return outLong("cuEventCreate", cuEventCreate, flags);
  }

  /** Destroys an event. */
  public void eventDestroy(long event) {
    checked("cuEventDestroy_v2", cuEventDestroy, event);
  }

  /** Records an event on a stream. */
  public void eventRecord(long event, long stream) {
    try {
      check((int) cuEventRecord.invokeExact(event, stream), "cuEventRecord");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Waits for an event. */
  public void eventSynchronize(long event) {
    checked("cuEventSynchronize", cuEventSynchronize, event);
  }

  /**
   * Makes work queued on {@code stream} after this call wait for the last record of {@code event}
   * (inside a stream capture: an edge from the recorded node, which also joins {@code stream} to
   * the capture).
   */
  public void streamWaitEvent(long stream, long event) {
    try {
      check((int) cuStreamWaitEvent.invokeExact(stream, event, 0), "cuStreamWaitEvent");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** Milliseconds between two recorded, completed events. */
  public float eventElapsedMillis(long start, long end) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_FLOAT);
      checked("cuEventElapsedTime", cuEventElapsedTime, out, start, end);
      return out.get(JAVA_FLOAT, 0);
    }
  }

  // ---- modules and launches ----

  /** Loads a module from a fatbin, cubin or PTX image in host memory. */
  public long moduleLoadData(MemorySegment image) {
    return outLong("cuModuleLoadData", cuModuleLoadData, image);
  }

  /** Unloads a module. */
  public void moduleUnload(long module) {
    checked("cuModuleUnload", cuModuleUnload, module);
  }

  /** The function {@code name} of a module. */
  public long moduleGetFunction(long module, String name) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      checked(
          "cuModuleGetFunction(" + name + ")",
          cuModuleGetFunction,
          out,
          module,
          a.allocateFrom(name));
      return out.get(JAVA_LONG, 0);
    }
  }

  /** Sets a CU_FUNC_ATTRIBUTE_* value of a function. */
  public void funcSetAttribute(long function, int attribute, int value) {
    checked("cuFuncSetAttribute", cuFuncSetAttribute, function, attribute, value);
  }

  /** Launches a kernel; {@code params} is the {@code void**} argument block. */
  public void launchKernel(
      long function,
      int gridX,
      int gridY,
      int gridZ,
      int blockX,
      int blockY,
      int blockZ,
      int sharedBytes,
      long stream,
      MemorySegment params,
      String name) {
    int rc;
    try {
      rc =
          (int)
              cuLaunchKernel.invokeExact(
                  function,
                  gridX,
                  gridY,
                  gridZ,
                  blockX,
                  blockY,
                  blockZ,
                  sharedBytes,
                  stream,
                  params,
                  MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    if (rc != 0) {
      check(rc, "cuLaunchKernel(" + name + ")");
    }
  }

  /**
   * Launches a kernel through {@code cuLaunchKernelEx} with {@code config}'s geometry, stream and
   * attributes (a programmatic dependent launch); {@code params} is the {@code void**} argument
   * block, as for {@link #launchKernel}.
   */
  public void launchKernelEx(
      LaunchConfig config, long function, MemorySegment params, String name) {
    int rc;
    try {
      rc =
          (int)
              cuLaunchKernelEx.invokeExact(config.segment(), function, params, MemorySegment.NULL);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    if (rc != 0) {
      check(rc, "cuLaunchKernelEx(" + name + ")");
    }
  }

  // ---- graphs ----

  /** Starts capturing work queued on {@code stream} (CU_STREAM_CAPTURE_MODE_*). */
  public void streamBeginCapture(long stream, int mode) {
    checked("cuStreamBeginCapture_v2", cuStreamBeginCapture, stream, mode);
  }

  /** Ends a capture and returns the captured graph. */
  public long streamEndCapture(long stream) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG); // the CUgraph* comes second here
      checked("cuStreamEndCapture", cuStreamEndCapture, stream, out);
      return out.get(JAVA_LONG, 0);
    }
  }

  /** Instantiates an executable graph. */
  public long graphInstantiate(long graph, long flags) {
    return outLong("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, graph, flags);
  }

  /** Launches an executable graph on a stream. */
  public void graphLaunch(long exec, long stream) {
    try {
      check((int) cuGraphLaunch.invokeExact(exec, stream), "cuGraphLaunch");
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /**
   * Updates an executable graph in place from a graph of the same topology (new kernel arguments).
   * Returns false when the update is not possible and the graph must be instantiated again.
   */
  public boolean graphExecUpdate(long exec, long graph) {
    try (Arena a = Arena.ofConfined()) {
      // CUgraphExecUpdateResultInfo: {int result; CUgraphNode errorNode; CUgraphNode errorFromNode}
      MemorySegment info = a.allocate(24, 8);
      int rc = call(cuGraphExecUpdate, exec, graph, info);
      if (rc == 910) { // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
        return false;
      }
      check(rc, "cuGraphExecUpdate_v2");
      return true;
    }
  }

  /** Destroys an executable graph. */
  public void graphExecDestroy(long exec) {
    checked("cuGraphExecDestroy", cuGraphExecDestroy, exec);
  }

  /** Destroys a graph. */
  public void graphDestroy(long graph) {
    checked("cuGraphDestroy", cuGraphDestroy, graph);
  }
}
