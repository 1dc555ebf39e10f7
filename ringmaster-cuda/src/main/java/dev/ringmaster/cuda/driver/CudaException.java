package dev.ringmaster.cuda.driver;

/** A failed CUDA driver or library call, naming the call and the error code's name and text. */
public final class CudaException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The numeric status the call returned (CUresult or cublasStatus_t), or -1 when none. */
  private final int code;

  /** An error for {@code call} that returned {@code code}, named {@code name}: {@code text}. */
  public CudaException(String call, int code, String name, String text) {
    super(call + " failed: " + name + " (" + code + "): " + text);
    this.code = code;
  }

  /** An error that is not a status code (for example a library that cannot be found). */
  public CudaException(String message, Throwable cause) {
    super(message, cause);
    this.code = -1;
  }

  /** The numeric status the call returned, or -1. */
  public int code() {
    return code;
  }
}
