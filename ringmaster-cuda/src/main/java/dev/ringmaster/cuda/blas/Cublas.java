package dev.ringmaster.cuda.blas;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ringmaster.cuda.driver.CudaException;
import dev.ringmaster.cuda.driver.NativeLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Typed bindings to the cuBLAS functions Ringmaster uses: handle life cycle, stream and workspace,
 * and the bf16 GEMMs with f32 accumulation. Found by {@link NativeLibraries} (cuBLAS 13, else 12).
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class Cublas {
  /** cudaDataType CUDA_R_32F. */
  public static final int CUDA_R_32F = 0;

  /** cudaDataType CUDA_R_16BF. */
  public static final int CUDA_R_16BF = 14;

  /** cublasComputeType_t CUBLAS_COMPUTE_32F. */
  public static final int CUBLAS_COMPUTE_32F = 68;

  /** cublasOperation_t values. */
  public static final int OP_N = 0;

  /** Transposed operand. */
  public static final int OP_T = 1;

  private static final int CUBLAS_GEMM_DEFAULT = -1;
  private static final Linker LINKER = Linker.nativeLinker();
  private static volatile Cublas instance;

  private final String source;
  private final MethodHandle create;
  private final MethodHandle destroy;
  private final MethodHandle setStream;
  private final MethodHandle setWorkspace;
  private final MethodHandle gemmEx;
  private final MethodHandle gemmStridedBatchedEx;
  private final MethodHandle statusName;
  private final MethodHandle statusString;
  private final MethodHandle getProperty;

  private Cublas(NativeLibraries.Loaded loaded) {
    SymbolLookup lib = loaded.lookup();
    this.source = loaded.source();
    FunctionDescriptor i = FunctionDescriptor.of(JAVA_INT);
    create = bind(lib, "cublasCreate_v2", i.appendArgumentLayouts(ADDRESS));
    destroy = bind(lib, "cublasDestroy_v2", i.appendArgumentLayouts(JAVA_LONG));
    setStream = bind(lib, "cublasSetStream_v2", i.appendArgumentLayouts(JAVA_LONG, JAVA_LONG));
    setWorkspace =
        bind(
            lib, "cublasSetWorkspace_v2", i.appendArgumentLayouts(JAVA_LONG, JAVA_LONG, JAVA_LONG));
    gemmEx =
        bind(
            lib,
            "cublasGemmEx",
            i.appendArgumentLayouts(
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG,
                JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT));
    gemmStridedBatchedEx =
        bind(
            lib,
            "cublasGemmStridedBatchedEx",
            i.appendArgumentLayouts(
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG,
                JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS,
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT));
    FunctionDescriptor str = FunctionDescriptor.of(ADDRESS, JAVA_INT);
    statusName = bind(lib, "cublasGetStatusName", str);
    statusString = bind(lib, "cublasGetStatusString", str);
    getProperty = bind(lib, "cublasGetProperty", i.appendArgumentLayouts(JAVA_INT, ADDRESS));
  }

  /** The process-wide bindings; throws {@link CudaException} saying what to install if absent. */
  public static Cublas get() {
    Cublas c = instance;
    if (c == null) {
      synchronized (Cublas.class) {
        c = instance;
        if (c == null) {
          c =
              new Cublas(
                  NativeLibraries.loadToolkitLibrary("libcublas", List.of("libcublasLt"), 13, 12));
          instance = c;
        }
      }
    }
    return c;
  }

  /** The library's version, {@code major.minor.patch} ({@code cublasGetProperty}). */
  public String version() {
    StringBuilder sb = new StringBuilder();
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_INT);
      for (int type = 0; type < 3; type++) { // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        int rc = (int) getProperty.invoke(type, out);
        if (rc != 0) {
          throw new CudaException("cublasGetProperty failed (" + rc + ")", null);
        }
        sb.append(type == 0 ? "" : ".").append(out.get(JAVA_INT, 0));
      }
    } catch (CudaException e) {
      throw e;
    } catch (Throwable t) {
      throw new CudaException("cublasGetProperty failed: " + t, t);
    }
    return sb.toString();
  }

  /** Where the library was loaded from. */
  public String source() {
    return source;
  }

  private static MethodHandle bind(SymbolLookup lib, String name, FunctionDescriptor fd) {
    return LINKER.downcallHandle(
        lib.find(name)
            .orElseThrow(
                () -> new CudaException("cuBLAS lacks " + name + ": install cuBLAS 12+", null)),
        fd);
  }

  void check(int status, String call) {
    if (status != 0) {
      throw new CudaException(call, status, text(statusName, status), text(statusString, status));
    }
  }

  private static String text(MethodHandle h, int status) {
    try {
      MemorySegment s = (MemorySegment) h.invoke(status);
      return s.address() == 0
          ? "unknown cublasStatus_t"
          : s.reinterpret(4096).getString(0, StandardCharsets.US_ASCII);
    } catch (Throwable t) {
      return "unknown cublasStatus_t";
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

  int call(MethodHandle h, Object... args) {
    try {
      return (int) h.invokeWithArguments(args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  long create() {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      check(call(create, out), "cublasCreate_v2");
      return out.get(JAVA_LONG, 0);
    }
  }

  void destroy(long handle) {
    check(call(destroy, handle), "cublasDestroy_v2");
  }

  void setStream(long handle, long stream) {
    check(call(setStream, handle, stream), "cublasSetStream_v2");
  }

  void setWorkspace(long handle, long ptr, long bytes) {
    check(call(setWorkspace, handle, ptr, bytes), "cublasSetWorkspace_v2");
  }

  void gemmEx(
      long handle,
      int transA,
      int transB,
      int m,
      int n,
      int k,
      MemorySegment alpha,
      long a,
      int aType,
      int lda,
      long b,
      int bType,
      int ldb,
      MemorySegment beta,
      long c,
      int cType,
      int ldc) {
    // invokeExact: the GEMMs are called per expert per layer in prefill, and the boxing and
    // spreading of invokeWithArguments costs more host time than the call itself.
    int rc;
    try {
      rc =
          (int)
              gemmEx.invokeExact(
                  handle,
                  transA,
                  transB,
                  m,
                  n,
                  k,
                  alpha,
                  a,
                  aType,
                  lda,
                  b,
                  bType,
                  ldb,
                  beta,
                  c,
                  cType,
                  ldc,
                  CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    check(rc, "cublasGemmEx");
  }

  void gemmStridedBatchedEx(
      long handle,
      int transA,
      int transB,
      int m,
      int n,
      int k,
      MemorySegment alpha,
      long a,
      int aType,
      int lda,
      long strideA,
      long b,
      int bType,
      int ldb,
      long strideB,
      MemorySegment beta,
      long c,
      int cType,
      int ldc,
      long strideC,
      int batch) {
    int rc;
    try {
      rc =
          (int)
              gemmStridedBatchedEx.invokeExact(
                  handle,
                  transA,
                  transB,
                  m,
                  n,
                  k,
                  alpha,
                  a,
                  aType,
                  lda,
                  strideA,
                  b,
                  bType,
                  ldb,
                  strideB,
                  beta,
                  c,
                  cType,
                  ldc,
                  strideC,
                  batch,
                  CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    check(rc, "cublasGemmStridedBatchedEx");
  }
}
