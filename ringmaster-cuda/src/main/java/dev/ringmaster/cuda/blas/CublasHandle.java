package dev.ringmaster.cuda.blas;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.cuda.driver.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A cuBLAS handle bound to one stream with its own workspace (set before any capture, so GEMMs can
 * be recorded into CUDA graphs). Row-major products in Ringmaster's layout: activations {@code [n,
 * k]}, weights {@code [m, k]} as {@code nn.Linear} stores them, outputs {@code [n, m]} in f32; bf16
 * operands, f32 accumulation. Use from the GPU's thread only.
 */
public final class CublasHandle implements AutoCloseable {
  /** Workspace size; cuBLAS asks for up to 32 MiB on Hopper. */
  public static final long WORKSPACE_BYTES = 32L << 20;

  private final Cublas cublas;
  private final long handle;
  private final DeviceBuffer workspace;
  private final MemorySegment one;
  private final MemorySegment zero;
  private boolean closed;

  /** Creates a handle for {@code stream} in the current context. */
  public CublasHandle(CudaStream stream) {
    this.cublas = Cublas.get();
    this.handle = cublas.create();
    this.workspace = DeviceBuffer.allocate(WORKSPACE_BYTES);
    cublas.setStream(handle, stream.handle());
    cublas.setWorkspace(handle, workspace.ptr(), WORKSPACE_BYTES);
    Arena arena = Arena.ofAuto();
    one = arena.allocate(ValueLayout.JAVA_FLOAT);
    one.set(ValueLayout.JAVA_FLOAT, 0, 1f);
    zero = arena.allocate(ValueLayout.JAVA_FLOAT);
    zero.set(ValueLayout.JAVA_FLOAT, 0, 0f);
  }

  /**
   * {@code y[n, m] = x[n, k] · W[m, k]^T} with x and W bf16, y f32 ({@code accumulate}: y += ...).
   * In cuBLAS's column-major terms this is {@code y^T (m x n) = W (k x m)^T · x^T (k x n)}.
   */
  public void linear(long y, long x, long w, int n, int m, int k, boolean accumulate) {
    cublas.gemmEx(
        handle,
        Cublas.OP_T,
        Cublas.OP_N,
        m,
        n,
        k,
        one,
        w,
        Cublas.CUDA_R_16BF,
        k,
        x,
        Cublas.CUDA_R_16BF,
        k,
        accumulate ? one : zero,
        y,
        Cublas.CUDA_R_32F,
        m);
  }

  /**
   * {@code batch} independent products {@code y_b[n, m] = x_b[n, k] · W_b[m, k]^T}, operand b at
   * element strides {@code strideX}, {@code strideW}, {@code strideY} (bf16, bf16, f32).
   */
  public void linearBatched(
      long y,
      long strideY,
      long x,
      long strideX,
      long w,
      long strideW,
      int n,
      int m,
      int k,
      int batch) {
    gemmStridedBatched(true, false, m, n, k, w, k, strideW, x, k, strideX, y, m, strideY, batch);
  }

  /**
   * The general strided-batched product in cuBLAS's own column-major terms: {@code C_b (m x n) =
   * op(A_b) (m x k) . op(B_b) (k x n)} for {@code b < batch}, with {@code A} and {@code B} bf16,
   * {@code C} f32, element strides between batches (0 shares one operand) and leading dimensions as
   * cuBLAS defines them. A row-major {@code [r, c]} matrix is a column-major {@code c x r} one.
   */
  public void gemmStridedBatched(
      boolean transA,
      boolean transB,
      int m,
      int n,
      int k,
      long a,
      int lda,
      long strideA,
      long b,
      int ldb,
      long strideB,
      long c,
      int ldc,
      long strideC,
      int batch) {
    gemmStridedBatched(
        transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, false, false, c, ldc, strideC,
        batch);
  }

  /**
   * As {@link #gemmStridedBatched(boolean, boolean, int, int, int, long, int, long, long, int,
   * long, long, int, long, int)}, with {@code accumulate} ({@code C += ...}, f32 only) and {@code
   * bf16Out} ({@code C} rounded to bf16 instead of f32).
   */
  public void gemmStridedBatched(
      boolean transA,
      boolean transB,
      int m,
      int n,
      int k,
      long a,
      int lda,
      long strideA,
      long b,
      int ldb,
      long strideB,
      boolean accumulate,
      boolean bf16Out,
      long c,
      int ldc,
      long strideC,
      int batch) {
    cublas.gemmStridedBatchedEx(
        handle,
        transA ? Cublas.OP_T : Cublas.OP_N,
        transB ? Cublas.OP_T : Cublas.OP_N,
        m,
        n,
        k,
        one,
        a,
        Cublas.CUDA_R_16BF,
        lda,
        strideA,
        b,
        Cublas.CUDA_R_16BF,
        ldb,
        strideB,
        accumulate ? one : zero,
        c,
        bf16Out ? Cublas.CUDA_R_16BF : Cublas.CUDA_R_32F,
        ldc,
        strideC,
        batch);
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      cublas.destroy(handle);
      workspace.close();
    }
  }
}
