package dev.ringmaster.cuda.nccl;

/** A failed NCCL call, or NCCL that cannot be loaded, with NCCL's own description. */
public final class NcclException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The ncclResult_t the call returned, or -1 when the failure is not a status. */
  private final int code;

  /** A failure of {@code call} that returned {@code code}, described by NCCL as {@code text}. */
  public NcclException(String call, int code, String text) {
    super(call + " failed: " + resultName(code) + " (" + code + "): " + text);
    this.code = code;
  }

  /** A failure that is not a status code (NCCL missing, a bad argument caught before the call). */
  public NcclException(String message, Throwable cause) {
    super(message, cause);
    this.code = -1;
  }

  /** The ncclResult_t, or -1. */
  public int code() {
    return code;
  }

  /** The name of an ncclResult_t value as nccl.h spells it. */
  public static String resultName(int code) {
    return switch (code) {
      case 0 -> "ncclSuccess";
      case 1 -> "ncclUnhandledCudaError";
      case 2 -> "ncclSystemError";
      case 3 -> "ncclInternalError";
      case 4 -> "ncclInvalidArgument";
      case 5 -> "ncclInvalidUsage";
      case 6 -> "ncclRemoteError";
      case 7 -> "ncclInProgress";
      default -> "ncclResult " + code;
    };
  }
}
