package dev.ringmaster.cuda.nccl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Typed bindings to NCCL ({@code libnccl.so.2}) through the FFM API. Communicators are opaque
 * {@code ncclComm_t} handles and buffers are device pointers, both passed as {@code long}; streams
 * are {@code CUstream} handles. {@code ncclUniqueId} (128 bytes) is passed by value, as a {@link
 * StructLayout}. Every call's {@code ncclResult_t} is checked: a failure throws {@link
 * NcclException} with {@code ncclGetErrorString} and, for a communicator, {@code ncclGetLastError}.
 *
 * <p>NCCL uses the CUDA context current on the calling thread: call from the GPU's own thread.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class Nccl {
  /** ncclFloat32. */
  public static final int FLOAT32 = 7;

  /** ncclSum. */
  public static final int SUM = 0;

  /** The ncclUniqueId struct, for by-value passing. */
  public static final StructLayout UNIQUE_ID =
      MemoryLayout.structLayout(MemoryLayout.sequenceLayout(NcclUniqueId.BYTES, JAVA_BYTE))
          .withName("ncclUniqueId");

  private static final Linker LINKER = Linker.nativeLinker();
  private static final FunctionDescriptor I = FunctionDescriptor.of(JAVA_INT);
  private static volatile Nccl instance;

  private final SymbolLookup lib;
  private final List<String> missing = new ArrayList<>();
  private final MethodHandle getVersion;
  private final MethodHandle getErrorString;
  private final MethodHandle getLastError;
  private final MethodHandle getUniqueId;
  private final MethodHandle commInitRank;
  private final MethodHandle commDestroy;
  private final MethodHandle commAbort;
  private final MethodHandle commGetAsyncError;
  private final MethodHandle allReduce;
  private final MethodHandle allGather;
  private final MethodHandle reduceScatter;
  private final MethodHandle broadcast;
  private final MethodHandle send;
  private final MethodHandle recv;
  private final MethodHandle groupStart;
  private final MethodHandle groupEnd;

  private Nccl(SymbolLookup lib) {
    this.lib = lib;
    getVersion = bind(I.appendArgumentLayouts(ADDRESS), "ncclGetVersion");
    getErrorString = bind(FunctionDescriptor.of(ADDRESS, JAVA_INT), "ncclGetErrorString");
    getLastError = bind(FunctionDescriptor.of(ADDRESS, JAVA_LONG), "ncclGetLastError");
    getUniqueId = bind(I.appendArgumentLayouts(ADDRESS), "ncclGetUniqueId");
    commInitRank =
        bind(I.appendArgumentLayouts(ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT), "ncclCommInitRank");
    commDestroy = bind(I.appendArgumentLayouts(JAVA_LONG), "ncclCommDestroy");
    commAbort = bind(I.appendArgumentLayouts(JAVA_LONG), "ncclCommAbort");
    commGetAsyncError = bind(I.appendArgumentLayouts(JAVA_LONG, ADDRESS), "ncclCommGetAsyncError");
    // (sendbuff, recvbuff, count, datatype, op, comm, stream)
    allReduce =
        bind(
            I.appendArgumentLayouts(
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclAllReduce");
    // (sendbuff, recvbuff, sendcount, datatype, comm, stream)
    allGather =
        bind(
            I.appendArgumentLayouts(
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclAllGather");
    // (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)
    reduceScatter =
        bind(
            I.appendArgumentLayouts(
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclReduceScatter");
    // (sendbuff, recvbuff, count, datatype, root, comm, stream)
    broadcast =
        bind(
            I.appendArgumentLayouts(
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclBroadcast");
    // (buff, count, datatype, peer, comm, stream)
    send =
        bind(
            I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclSend");
    recv =
        bind(
            I.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            "ncclRecv");
    groupStart = bind(I, "ncclGroupStart");
    groupEnd = bind(I, "ncclGroupEnd");
    if (!missing.isEmpty()) {
      throw new NcclException(
          "libnccl.so.2 lacks " + missing + ": install NCCL 2.19 or newer", null);
    }
  }

  /** The process-wide bindings; throws {@link NcclException} when NCCL cannot be loaded. */
  public static Nccl get() {
    Nccl n = instance;
    if (n == null) {
      synchronized (Nccl.class) {
        n = instance;
        if (n == null) {
          n = new Nccl(load());
          instance = n;
        }
      }
    }
    return n;
  }

  private static SymbolLookup load() {
    String override = System.getenv("RINGMASTER_NCCL_LIBRARY");
    String name = override != null && !override.isBlank() ? override : "libnccl.so.2";
    try {
      return SymbolLookup.libraryLookup(name, Arena.global());
    } catch (IllegalArgumentException e) {
      throw new NcclException(
          "NCCL cannot be loaded ("
              + name
              + "): install NCCL 2 (Debian/Ubuntu package libnccl2) or set RINGMASTER_NCCL_LIBRARY"
              + " to the library's path",
          e);
    }
  }

  private MethodHandle bind(FunctionDescriptor fd, String name) {
    var sym = lib.find(name);
    if (sym.isEmpty()) {
      missing.add(name);
      return null;
    }
    return LINKER.downcallHandle(sym.get(), fd);
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

  private void check(int status, String call, long comm) {
    if (status == 0) {
      return;
    }
    String text = cString(getErrorString, status);
    if (comm != 0) {
      String last = lastError(comm);
      if (!last.isBlank()) {
        text = text + "; last error: " + last;
      }
    }
    throw new NcclException(call, status, text);
  }

  private static String cString(MethodHandle h, Object arg) {
    try {
      MemorySegment s = (MemorySegment) h.invoke(arg);
      return s.address() == 0 ? "" : s.reinterpret(4096).getString(0, StandardCharsets.UTF_8);
    } catch (Throwable t) {
      return "(no description)";
    }
  }

  private void call(String name, long comm, MethodHandle h, Object... args) {
    int status;
    try {
      status = (int) h.invokeWithArguments(args);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    check(status, name, comm);
  }

  // ---- version, ids, communicators ----

  /** NCCL's version code, e.g. 22803 for 2.28.3. */
  public int version() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      call("ncclGetVersion", 0, getVersion, out);
      return out.get(JAVA_INT, 0);
    }
  }

  /**
   * The version code as "major.minor.patch" (codes from 2.9 on are major*10000+minor*100+patch).
   */
  public static String versionString(int code) {
    return code / 10000 + "." + code / 100 % 100 + "." + code % 100;
  }

  /** A fresh unique id; rank 0 makes it and sends it to the others. */
  public NcclUniqueId uniqueId() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment id = a.allocate(UNIQUE_ID);
      call("ncclGetUniqueId", 0, getUniqueId, id);
      return new NcclUniqueId(id.toArray(JAVA_BYTE));
    }
  }

  /**
   * {@code ncclCommInitRank}: joins rank {@code rank} of {@code nranks} on the current context's
   * GPU. Blocks until every rank has joined, so ranks call it concurrently (one thread each), or
   * inside {@link #groupStart()}/{@link #groupEnd()} when one thread drives several GPUs.
   */
  public long commInitRank(int nranks, NcclUniqueId id, int rank) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ADDRESS);
      MemorySegment idSeg = a.allocate(UNIQUE_ID);
      idSeg.copyFrom(MemorySegment.ofArray(id.bytes()));
      call("ncclCommInitRank", 0, commInitRank, out, nranks, idSeg, rank);
      return out.get(JAVA_LONG, 0);
    }
  }

  /** Destroys a communicator after its queued work completes. */
  public void commDestroy(long comm) {
    call("ncclCommDestroy", 0, commDestroy, comm);
  }

  /** Aborts a communicator: its pending operations are dropped (after an error or a timeout). */
  public void commAbort(long comm) {
    call("ncclCommAbort", 0, commAbort, comm);
  }

  /** The communicator's asynchronous error state (0 while healthy, 7 while still initialising). */
  public int commAsyncError(long comm) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      call("ncclCommGetAsyncError", comm, commGetAsyncError, comm, out);
      return out.get(JAVA_INT, 0);
    }
  }

  /**
   * Throws if the communicator has recorded an asynchronous error (a peer died, a network fault).
   */
  public void checkAsyncError(long comm) {
    check(commAsyncError(comm), "ncclCommGetAsyncError", comm);
  }

  /** NCCL's text for the last error on {@code comm}. */
  public String lastError(long comm) {
    return cString(getLastError, comm);
  }

  // ---- collectives (f32 sums; queued on the stream, captured into graphs like any launch) ----

  /** Sums {@code count} floats over ranks; {@code send == recv} is in place. */
  public void allReduce(long send, long recv, long count, long comm, long stream) {
    call("ncclAllReduce", comm, allReduce, send, recv, count, FLOAT32, SUM, comm, stream);
  }

  /** Gathers {@code sendCount} floats of each rank into {@code recv} in rank order. */
  public void allGather(long send, long recv, long sendCount, long comm, long stream) {
    call("ncclAllGather", comm, allGather, send, recv, sendCount, FLOAT32, comm, stream);
  }

  /** Sums {@code recvCount * nranks} floats and leaves this rank's block in {@code recv}. */
  public void reduceScatter(long send, long recv, long recvCount, long comm, long stream) {
    call(
        "ncclReduceScatter",
        comm,
        reduceScatter,
        send,
        recv,
        recvCount,
        FLOAT32,
        SUM,
        comm,
        stream);
  }

  /**
   * Copies {@code count} floats from rank {@code root}'s {@code send} to every rank's {@code recv}.
   */
  public void broadcast(long send, long recv, long count, int root, long comm, long stream) {
    call("ncclBroadcast", comm, broadcast, send, recv, count, FLOAT32, root, comm, stream);
  }

  /** Point-to-point send of {@code count} floats to {@code peer} (pair with its {@link #recv}). */
  public void send(long buf, long count, int peer, long comm, long stream) {
    call("ncclSend", comm, send, buf, count, FLOAT32, peer, comm, stream);
  }

  /** Point-to-point receive of {@code count} floats from {@code peer}. */
  public void recv(long buf, long count, int peer, long comm, long stream) {
    call("ncclRecv", comm, recv, buf, count, FLOAT32, peer, comm, stream);
  }

  /** Opens a group: the calls until {@link #groupEnd()} are issued together. */
  public void groupStart() {
    call("ncclGroupStart", 0, groupStart);
  }

  /** Closes a group and issues its calls. */
  public void groupEnd() {
    call("ncclGroupEnd", 0, groupEnd);
  }
}
